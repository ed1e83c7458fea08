package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// jsonScan reads the two large parts of tokenizer.json, the vocabulary
// object and the merge list, by hand: decoding them through reflection was
// most of Load's time. The input has already passed json.Unmarshal, so the
// scanner only needs to follow valid JSON; strings with escapes are handed
// back to encoding/json.
type jsonScan struct {
	b []byte
	i int
}

func (s *jsonScan) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips space and reports the next byte without consuming it.
func (s *jsonScan) next() byte {
	s.space()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *jsonScan) expect(c byte) error {
	if s.next() != c {
		return fmt.Errorf("at byte %d: want %q", s.i, c)
	}
	s.i++
	return nil
}

func (s *jsonScan) str() (string, error) {
	if s.next() != '"' {
		return "", fmt.Errorf("at byte %d: want a string", s.i)
	}
	j, escaped := s.i+1, false
	for j < len(s.b) && s.b[j] != '"' {
		if s.b[j] == '\\' {
			escaped = true
			j++
		}
		j++
	}
	if j >= len(s.b) {
		return "", fmt.Errorf("at byte %d: unterminated string", s.i)
	}
	raw := s.b[s.i : j+1]
	s.i = j + 1
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var out string
	err := json.Unmarshal(raw, &out)
	return out, err
}

func (s *jsonScan) int32() (int32, error) {
	s.space()
	j := s.i
	for j < len(s.b) && (s.b[j] == '-' || '0' <= s.b[j] && s.b[j] <= '9') {
		j++
	}
	n, err := strconv.ParseInt(string(s.b[s.i:j]), 10, 32)
	s.i = j
	return int32(n), err
}

// scanVocab reads {"token": id, ...}.
func scanVocab(raw []byte) (map[string]int32, error) {
	s := &jsonScan{b: raw}
	if err := s.expect('{'); err != nil {
		return nil, fmt.Errorf("tokenizer: model.vocab: %w", err)
	}
	vocab := make(map[string]int32, len(raw)/16)
	for s.next() != '}' {
		tok, err := s.str()
		if err == nil {
			err = s.expect(':')
		}
		var id int32
		if err == nil {
			id, err = s.int32()
		}
		if err != nil {
			return nil, fmt.Errorf("tokenizer: model.vocab: %w", err)
		}
		vocab[tok] = id
		if s.next() == ',' {
			s.i++
		}
	}
	return vocab, nil
}

// scanMerges reads merges written either as "a b" strings (older files) or
// as ["a", "b"] pairs (newer files; Qwen3's).
func scanMerges(raw []byte) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := &jsonScan{b: raw}
	if err := s.expect('['); err != nil {
		return nil, fmt.Errorf("tokenizer: model.merges: %w", err)
	}
	var pairs [][2]string
	for n := 0; s.next() != ']'; n++ {
		var p [2]string
		var err error
		if s.next() == '[' {
			s.i++
			if p[0], err = s.str(); err == nil {
				if err = s.expect(','); err == nil {
					if p[1], err = s.str(); err == nil {
						err = s.expect(']')
					}
				}
			}
		} else {
			var l string
			if l, err = s.str(); err == nil {
				p, err = splitMerge(l)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("tokenizer: model.merges: merge %d: %w (want \"a b\" or [\"a\", \"b\"])", n, err)
		}
		pairs = append(pairs, p)
		if s.next() == ',' {
			s.i++
		}
	}
	return pairs, nil
}
