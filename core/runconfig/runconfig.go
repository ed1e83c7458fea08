// Package runconfig reads and writes whale's configuration files: TOML
// whose top-level keys are a command's flags (`domain = "math"`, `E =
// 0.25`) and whose [engine] table holds run settings no flag sets
// (`val_tasks = 8`). It knows no command: callers say which keys exist
// and what to do with each value; every error names the file and line.
//
// It never reads anything but the file it is given.
package runconfig

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// EngineTable is the table of settings that no flag sets.
const EngineTable = "engine"

// Entry is one key of a file with its value as TOML decoded it (string,
// int64, float64, bool, or []any of those) and the line it is on.
type Entry struct {
	// Table is "" for a top-level key, EngineTable for one in [engine].
	Table string
	Key   string
	Value any
	Line  int
}

// File is a parsed configuration file.
type File struct {
	Name    string
	Entries []Entry
}

// Read parses the file at path.
func Read(path string) (File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("config: %w", err)
	}
	return Parse(path, src)
}

// Parse parses src (named name in errors). Tables other than [engine],
// nested tables and arrays of tables are refused naming their line.
func Parse(name string, src []byte) (File, error) {
	f := File{Name: name}
	var m map[string]any
	if _, err := toml.Decode(string(src), &m); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return f, fmt.Errorf("%s:%d:%d: %s", name, pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return f, fmt.Errorf("%s: %w", name, err)
	}
	lines := keyLines(src)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		if t, ok := v.(map[string]any); ok {
			if k != EngineTable {
				return f, fmt.Errorf("%s:%d: table [%s]: not a table this file has", name, lines[tableKey{"", "[" + k}], k)
			}
			for ek, ev := range t {
				if _, nested := ev.(map[string]any); nested {
					line := lines[tableKey{k, ek}]
					if line == 0 {
						line = lines[tableKey{"", "[" + k + "." + ek}]
					}
					return f, fmt.Errorf("%s:%d: [%s] %s: a table inside [%s]", name, line, k, ek, k)
				}
				f.Entries = append(f.Entries, Entry{Table: k, Key: ek, Value: ev, Line: lines[tableKey{k, ek}]})
			}
			continue
		}
		if _, ok := v.([]map[string]any); ok {
			return f, fmt.Errorf("%s:%d: [[%s]]: arrays of tables are not part of this file", name, lines[tableKey{"", "[[" + k}], k)
		}
		f.Entries = append(f.Entries, Entry{Key: k, Value: v, Line: lines[tableKey{"", k}]})
	}
	sort.SliceStable(f.Entries, func(i, j int) bool { return f.Entries[i].Line < f.Entries[j].Line })
	return f, nil
}

type tableKey struct{ table, key string }

// keyLines finds the line of each key and table header of a file that
// decoded, skipping the inside of multi-line strings: BurntSushi/toml
// keeps positions to itself.
func keyLines(src []byte) map[tableKey]int {
	out := map[tableKey]int{}
	table, inString := "", ""
	for i, line := range strings.Split(string(src), "\n") {
		n := i + 1
		s := strings.TrimSpace(line)
		if inString != "" {
			if strings.Count(s, inString)%2 == 1 {
				inString = ""
			}
			continue
		}
		switch {
		case s == "" || strings.HasPrefix(s, "#"):
			continue
		case strings.HasPrefix(s, "[["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "]]", 2)[0], "[ "))
			out[tableKey{"", "[[" + name}] = n
			table = name
			continue
		case strings.HasPrefix(s, "["):
			name := strings.TrimSpace(strings.Trim(strings.SplitN(s, "]", 2)[0], "[ "))
			out[tableKey{"", "[" + name}] = n
			table = name
			continue
		}
		eq := strings.Index(s, "=")
		if eq < 0 {
			continue
		}
		key := strings.Trim(strings.TrimSpace(s[:eq]), `"'`)
		if _, seen := out[tableKey{table, key}]; !seen {
			out[tableKey{table, key}] = n
		}
		rest := s[eq+1:]
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(rest, q)%2 == 1 {
				inString = q
			}
		}
	}
	return out
}

// Errorf is an error about entry e of f, naming the file, line and key.
func (f File) Errorf(e Entry, format string, args ...any) error {
	key := e.Key
	if e.Table != "" {
		key = "[" + e.Table + "] " + key
	}
	return fmt.Errorf("%s:%d: %s: %s", f.Name, e.Line, key, fmt.Sprintf(format, args...))
}

// FlagValue is an entry's value as a flag's text, for a flag of type
// kind (pflag's Value.Type(): "bool", "int", "uint64", "float64",
// "string", "duration", ...): a TOML value of another type is refused
// (`budget = "64"` is a string, not a count); an array of strings is a
// comma-separated list.
func FlagValue(v any, kind string) (string, error) {
	switch kind {
	case "bool":
		if b, ok := v.(bool); ok {
			return strconv.FormatBool(b), nil
		}
		return "", fmt.Errorf("%s, want true or false", describe(v))
	case "int", "int64", "uint64", "uint", "int32":
		if n, ok := v.(int64); ok {
			return strconv.FormatInt(n, 10), nil
		}
		return "", fmt.Errorf("%s, want an integer", describe(v))
	case "float64", "float32":
		switch x := v.(type) {
		case int64:
			return strconv.FormatInt(x, 10), nil
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		}
		return "", fmt.Errorf("%s, want a number", describe(v))
	default: // string, duration and other text flags
		switch x := v.(type) {
		case string:
			return x, nil
		case []any:
			parts := make([]string, len(x))
			for i, p := range x {
				s, ok := p.(string)
				if !ok {
					return "", fmt.Errorf("%s, want an array of strings", describe(v))
				}
				parts[i] = s
			}
			return strings.Join(parts, ","), nil
		}
		return "", fmt.Errorf("%s, want a string", describe(v))
	}
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("string %q", v)
	case int64:
		return fmt.Sprintf("integer %v", v)
	case float64:
		return fmt.Sprintf("float %v", v)
	case bool:
		return fmt.Sprintf("boolean %v", v)
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// Pair is one key and value to write.
type Pair struct {
	Key   string
	Value any
}

// Encode writes a file: a comment (each line prefixed "# "), the
// top-level pairs in order, then the [engine] table's pairs.
func Encode(comment string, top, engine []Pair) ([]byte, error) {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(comment, "\n"), "\n") {
		if comment != "" {
			fmt.Fprintf(&b, "# %s\n", l)
		}
	}
	write := func(ps []Pair) error {
		for _, p := range ps {
			line, err := encodePair(p)
			if err != nil {
				return err
			}
			b.WriteString(line)
		}
		return nil
	}
	if err := write(top); err != nil {
		return nil, err
	}
	if len(engine) > 0 {
		fmt.Fprintf(&b, "\n[%s]\n", EngineTable)
		if err := write(engine); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// encodePair writes one key = value line with the TOML library's
// quoting (a one-key table encoded alone).
func encodePair(p Pair) (string, error) {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(map[string]any{p.Key: p.Value}); err != nil {
		return "", fmt.Errorf("config: encode %s: %w", p.Key, err)
	}
	return b.String(), nil
}
