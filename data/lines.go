package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MaxLineBytes bounds one record of an imported line-oriented file, so that
// a corrupt file (no newlines) cannot make an importer hold it all at once.
const MaxLineBytes = 1 << 20

// ScanLines hands each non-blank line of the file at path to decode, with
// its 1-based line number. decode returns nil or a BadLine saying what is
// wrong (ScanLines fills in File and Line). Without skipBad the first bad
// line is returned as the error; with it the bad lines are collected and
// returned. A line longer than MaxLineBytes is a bad line. I/O failures are
// errors either way.
func ScanLines(path string, skipBad bool, decode func(line int, text []byte) *BadLine) ([]BadLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: open %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var bad []BadLine
	report := func(b BadLine) error {
		b.File = path
		bad = append(bad, b)
		if !skipBad {
			return b
		}
		return nil
	}
	for n := 1; ; n++ {
		text, tooLong, err := readLine(r)
		if err != nil && !errors.Is(err, io.EOF) {
			return bad, fmt.Errorf("data: read %s:%d: %w", path, n, err)
		}
		if tooLong {
			b := BadLine{Line: n, Reason: fmt.Sprintf("line longer than %d bytes", MaxLineBytes)}
			if rerr := report(b); rerr != nil {
				return bad, rerr
			}
		} else if len(bytes.TrimSpace(text)) > 0 {
			if b := decode(n, text); b != nil {
				b.Line = n
				if rerr := report(*b); rerr != nil {
					return bad, rerr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return bad, nil
		}
	}
}

// readLine returns the next line without its end-of-line bytes; a line over
// MaxLineBytes is consumed and reported as tooLong.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLineBytes+2 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil || errors.Is(err, io.EOF) {
			if len(chunk) == 0 && len(buf) == 0 && errors.Is(err, io.EOF) && !tooLong {
				return nil, false, io.EOF
			}
			buf = bytes.TrimRight(buf, "\r\n")
			return buf, tooLong, err
		}
		return nil, false, err
	}
}

// DecodeObject parses one JSON object line into its raw fields. A syntax
// error or a value that is not an object comes back as a BadLine.
func DecodeObject(text []byte) (map[string]json.RawMessage, *BadLine) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(text, &m); err != nil {
		reason := "invalid JSON: " + err.Error()
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			reason = "want a JSON object, got " + te.Value
		}
		return nil, &BadLine{Reason: reason}
	}
	if m == nil {
		return nil, &BadLine{Reason: "want a JSON object, got null"}
	}
	return m, nil
}

// StringField reads a required non-empty string field of a decoded object.
func StringField(m map[string]json.RawMessage, name string) (string, *BadLine) {
	raw, ok := m[name]
	if !ok {
		return "", &BadLine{Field: name, Reason: "missing"}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &BadLine{Field: name, Reason: "want a string, got " + jsonKind(raw)}
	}
	if strings.TrimSpace(s) == "" {
		return "", &BadLine{Field: name, Reason: "empty"}
	}
	return s, nil
}

// OptionalStringField reads a string field that may be absent (then "").
// A JSON number is accepted and kept as written, since ids often are numbers.
func OptionalStringField(m map[string]json.RawMessage, name string) (string, *BadLine) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", &BadLine{Field: name, Reason: "want a string, got " + jsonKind(raw)}
}

func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
