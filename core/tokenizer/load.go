package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dlclark/regexp2"

	"whale/internal/readcap"
)

// Load reads a Hugging Face tokenizer.json: path is the file itself (gzip
// compressed when it ends in .gz) or a model directory that holds one.
func Load(path string) (*BPE, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := readcap.File(path, readcap.Tokenizer, "tokenizer")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		if data, err = readcap.Reader(zr, readcap.Tokenizer, "tokenizer "+path+", decompressed,"); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// maxID bounds token ids, so that a corrupt file cannot make Parse
// allocate tables for billions of ids; real vocabularies stay under 300 000.
const maxID = 1<<24 - 1

// hfFile is the part of tokenizer.json that byte-level BPE needs.
type hfFile struct {
	AddedTokens  []hfAddedToken `json:"added_tokens"`
	Normalizer   *hfComponent   `json:"normalizer"`
	PreTokenizer *hfComponent   `json:"pre_tokenizer"`
	Decoder      *hfComponent   `json:"decoder"`
	Model        struct {
		Type                    string          `json:"type"`
		Dropout                 *float64        `json:"dropout"`
		ContinuingSubwordPrefix string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         string          `json:"end_of_word_suffix"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
		Vocab                   json.RawMessage `json:"vocab"`  // read by scanVocab
		Merges                  json.RawMessage `json:"merges"` // read by scanMerges
	} `json:"model"`
}

// hfAddedToken is one of tokenizer.json's added_tokens.
type hfAddedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// hfComponent is a normalizer, pre-tokenizer or decoder; only the fields
// whale reads are named.
type hfComponent struct {
	Type           string         `json:"type"`
	Normalizers    []*hfComponent `json:"normalizers"`
	PreTokenizers  []*hfComponent `json:"pretokenizers"`
	Decoders       []*hfComponent `json:"decoders"`
	Pattern        *hfPattern     `json:"pattern"`
	Behavior       string         `json:"behavior"`
	Invert         bool           `json:"invert"`
	AddPrefixSpace bool           `json:"add_prefix_space"`
	UseRegex       *bool          `json:"use_regex"`
}

type hfPattern struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// Parse builds a tokenizer from the bytes of a tokenizer.json. It accepts
// what Qwen's files use and refuses, naming the part, anything it would
// encode differently from Hugging Face: a BPE model without dropout,
// subword affixes or byte fallback; an NFC normaliser or none; a single
// Split pre-tokenizer (behavior Isolated) followed by ByteLevel without
// regex, or ByteLevel with its GPT-2 regex; a ByteLevel decoder; added
// tokens without lstrip, rstrip or single_word.
func Parse(data []byte) (*BPE, error) {
	var f hfFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: parse tokenizer.json: %w", err)
	}
	m := &f.Model
	switch {
	case m.Type != "BPE" && m.Type != "":
		return nil, fmt.Errorf("tokenizer: model type %q is not supported (want BPE)", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, errors.New("tokenizer: BPE dropout is not supported")
	case m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "":
		return nil, errors.New("tokenizer: BPE continuing_subword_prefix and end_of_word_suffix are not supported")
	case m.ByteFallback:
		return nil, errors.New("tokenizer: BPE byte_fallback is not supported (want a byte-level vocabulary)")
	}
	vocab, err := scanVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	if len(vocab) == 0 {
		return nil, errors.New("tokenizer: model.vocab is empty")
	}
	t := &BPE{ignoreMerges: m.IgnoreMerges, special: map[int32]bool{}}
	if t.nfc, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.split, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}

	size := 0
	for tok, id := range vocab {
		if id < 0 || id > maxID {
			return nil, fmt.Errorf("tokenizer: vocab token %q has id %d (want 0 to %d)", tok, id, maxID)
		}
		size = max(size, int(id)+1)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.ID > maxID {
			return nil, fmt.Errorf("tokenizer: added token %q has id %d (want 0 to %d)", a.Content, a.ID, maxID)
		}
		size = max(size, int(a.ID)+1)
	}
	t.tokens = make([]string, size)
	t.bytes = make([][]byte, size)
	t.ids = make(map[string]int32, size)
	for tok, id := range vocab {
		if t.bytes[id] != nil {
			return nil, fmt.Errorf("tokenizer: vocab tokens %q and %q share id %d", t.tokens[id], tok, id)
		}
		t.tokens[id], t.bytes[id], t.ids[tok] = tok, byteLevelBytes(tok), id
	}
	for b := 0; b < 256; b++ {
		id, ok := vocab[string(byteRune[b])]
		if !ok {
			return nil, fmt.Errorf("tokenizer: vocab lacks the token for byte 0x%02x (%q), so some text could not be encoded", b, string(byteRune[b]))
		}
		t.byteID[b] = id
	}

	if err := t.readAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	if err := t.readMerges(m.Merges, vocab); err != nil {
		return nil, err
	}
	return t, nil
}

// readAdded enters the added tokens and builds their matchers.
func (t *BPE) readAdded(added []hfAddedToken) error {
	var raw, plain, norm, normPlain []addedToken
	for _, a := range added {
		if a.LStrip || a.RStrip || a.SingleWord {
			return fmt.Errorf("tokenizer: added token %q uses lstrip, rstrip or single_word, which are not supported", a.Content)
		}
		if a.Content == "" {
			return fmt.Errorf("tokenizer: added token %d is empty", a.ID)
		}
		t.tokens[a.ID], t.bytes[a.ID], t.ids[a.Content] = a.Content, []byte(a.Content), a.ID
		t.special[a.ID] = a.Special
		at := addedToken{a.Content, a.ID}
		if a.Normalized {
			norm = append(norm, at)
			if !a.Special {
				normPlain = append(normPlain, at)
			}
		} else {
			raw = append(raw, at)
			if !a.Special {
				plain = append(plain, at)
			}
		}
	}
	t.withSpecial, t.plain = newAddedMatcher(raw), newAddedMatcher(plain)
	t.normalizedAdded, t.normalizedPlain = newAddedMatcher(norm), newAddedMatcher(normPlain)
	return nil
}

// readMerges ranks the merges (raw: model.merges as stored).
func (t *BPE) readMerges(raw json.RawMessage, vocab map[string]int32) error {
	pairs, err := scanMerges(raw)
	if err != nil {
		return err
	}
	t.merges = make(map[uint64]merge, len(pairs))
	t.ranked = make([][2]int32, 0, len(pairs))
	for i, p := range pairs {
		a, okA := vocab[p[0]]
		b, okB := vocab[p[1]]
		c, okC := vocab[p[0]+p[1]]
		if !okA || !okB || !okC {
			return fmt.Errorf("tokenizer: merge %d (%q %q) names a token missing from the vocab", i, p[0], p[1])
		}
		// A repeated pair keeps its last rank, as in Hugging Face.
		t.merges[pairKey(a, b)] = merge{rank: int32(i), id: c}
		t.ranked = append(t.ranked, [2]int32{a, b})
	}
	return nil
}

// splitMerge reads a merge written as one string "a b".
func splitMerge(l string) ([2]string, error) {
	a, b, ok := strings.Cut(l, " ")
	if !ok || strings.Contains(b, " ") {
		return [2]string{}, fmt.Errorf("%q: want two tokens separated by one space", l)
	}
	return [2]string{a, b}, nil
}

func parseNormalizer(c *hfComponent) (nfc bool, err error) {
	if c == nil {
		return false, nil
	}
	switch c.Type {
	case "NFC":
		return true, nil
	case "Sequence":
		for _, n := range c.Normalizers {
			ok, err := parseNormalizer(n)
			if err != nil {
				return false, err
			}
			nfc = nfc || ok
		}
		return nfc, nil
	}
	return false, fmt.Errorf("tokenizer: normalizer %q is not supported (want NFC or none)", c.Type)
}

func parsePreTokenizer(c *hfComponent) (splitter, error) {
	if c == nil {
		return nil, errors.New("tokenizer: no pre_tokenizer (want Split + ByteLevel, or ByteLevel)")
	}
	steps := []*hfComponent{c}
	if c.Type == "Sequence" {
		steps = c.PreTokenizers
	}
	var pattern *string
	byteLevel := false
	for i, s := range steps {
		if s == nil {
			return nil, fmt.Errorf("tokenizer: pre_tokenizer %d is null", i)
		}
		switch s.Type {
		case "Split":
			if pattern != nil || byteLevel {
				return nil, errors.New("tokenizer: pre_tokenizer: only one Split, before ByteLevel, is supported")
			}
			if s.Behavior != "Isolated" || s.Invert {
				return nil, fmt.Errorf("tokenizer: pre_tokenizer Split with behavior %q invert %v is not supported (want Isolated, not inverted)", s.Behavior, s.Invert)
			}
			switch {
			case s.Pattern != nil && s.Pattern.Regex != nil:
				pattern = s.Pattern.Regex
			case s.Pattern != nil && s.Pattern.String != nil:
				p := regexp2.Escape(*s.Pattern.String)
				pattern = &p
			default:
				return nil, errors.New("tokenizer: pre_tokenizer Split has no pattern")
			}
		case "ByteLevel":
			if byteLevel {
				return nil, errors.New("tokenizer: pre_tokenizer: ByteLevel twice")
			}
			if s.AddPrefixSpace {
				return nil, errors.New("tokenizer: pre_tokenizer ByteLevel with add_prefix_space is not supported")
			}
			byteLevel = true
			useRegex := s.UseRegex == nil || *s.UseRegex
			if useRegex {
				if pattern != nil {
					return nil, errors.New("tokenizer: pre_tokenizer: Split followed by ByteLevel with use_regex is not supported")
				}
				p := gpt2Pattern
				pattern = &p
			}
		default:
			return nil, fmt.Errorf("tokenizer: pre_tokenizer %q is not supported (want Split and ByteLevel)", s.Type)
		}
	}
	if !byteLevel {
		return nil, errors.New("tokenizer: pre_tokenizer lacks ByteLevel (whale reads byte-level BPE only)")
	}
	if pattern == nil {
		return nil, errors.New("tokenizer: pre_tokenizer has no split pattern")
	}
	return newSplitter(*pattern)
}

func checkDecoder(c *hfComponent) error {
	if c == nil {
		return errors.New("tokenizer: no decoder (want ByteLevel)")
	}
	if c.Type == "ByteLevel" {
		return nil
	}
	if c.Type == "Sequence" && len(c.Decoders) == 1 {
		return checkDecoder(c.Decoders[0])
	}
	return fmt.Errorf("tokenizer: decoder %q is not supported (want ByteLevel)", c.Type)
}
