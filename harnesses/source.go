package harnesses

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Issue is one problem found in a harness: where, which rule, what.
type Issue struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
	// Rule names the check that failed ("syntax", "contract", "range",
	// "lint/fen", ...).
	Rule string `json:"rule"`
	Msg  string `json:"msg"`
}

func (i Issue) String() string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", i.File, i.Line, i.Col, i.Rule, i.Msg)
}

// LoadError lists every issue that kept a harness from loading.
type LoadError struct {
	Issues []Issue
}

func (e *LoadError) Error() string {
	lines := make([]string, len(e.Issues))
	for i, is := range e.Issues {
		lines[i] = is.String()
	}
	return strings.Join(lines, "\n")
}

func issueAt(file string, pos syntax.Position, rule, format string, args ...any) Issue {
	return Issue{File: file, Line: int(pos.Line), Col: int(pos.Col), Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

// Normalize is the canonical form of a harness source: LF line ends, no
// trailing spaces, no trailing blank lines, one final newline. Identity
// and diffs are taken over it, so whitespace-only edits do not make a new
// candidate.
func Normalize(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	lines := strings.Split(src, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// Hash is the identity of a harness: the hex sha256 of its normalised
// source.
func Hash(src string) string {
	sum := sha256.Sum256([]byte(Normalize(src)))
	return hex.EncodeToString(sum[:])
}

// topLevel is what a static reading of a source knows: its top-level
// assignments and definitions, and its SEARCH_SPACE as written.
type topLevel struct {
	file   *syntax.File
	src    string
	assign map[string]*syntax.AssignStmt
	defs   map[string]*syntax.DefStmt
	// pos is where each top-level name is defined.
	pos map[string]syntax.Position
	// space is SEARCH_SPACE as written; nil when absent.
	space []Dimension
	// frags is FRAGMENTS as written; nil when absent.
	frags []Fragment
	// choices are the expressions of each knob's SEARCH_SPACE choices,
	// in the order of Dimension.Choices (nil entries for a range's
	// values), and ranges where each ranged knob's range is written:
	// what the contract check of every choice (checkSpace) reports at.
	choices map[string][]syntax.Expr
	ranges  map[string]syntax.Position
}

// Dimension is one knob a proposer may vary.
type Dimension struct {
	Knob string `json:"knob"`
	// Choices are the source texts of the alternatives, as written in
	// SEARCH_SPACE: literals (3, "last") or names of top-level
	// definitions (fragments such as _parse_first_tag).
	Choices []string `json:"choices"`
	// Current is the source text of the knob's present value.
	Current string `json:"current"`
	// Fragment is true when the choices name definitions rather than
	// literal values.
	Fragment bool `json:"fragment"`
	// Range is set for a ranged numeric knob (`"K": range(1, 9)`): any
	// int of the range is a choice, and Choices lists them all.
	Range *IntRange `json:"range,omitempty"`
	Line  int       `json:"line"`
}

func parseSource(file, src string) (*syntax.File, error) {
	return fileOptions.Parse(file, src, 0)
}

// readTopLevel indexes the top-level statements of a parsed file and reads
// SEARCH_SPACE, reporting structural problems as issues.
func readTopLevel(f *syntax.File, src string) (*topLevel, []Issue) {
	t := &topLevel{file: f, src: src, assign: map[string]*syntax.AssignStmt{}, defs: map[string]*syntax.DefStmt{}, pos: map[string]syntax.Position{},
		choices: map[string][]syntax.Expr{}, ranges: map[string]syntax.Position{}}
	var issues []Issue
	for _, s := range f.Stmts {
		switch s := s.(type) {
		case *syntax.AssignStmt:
			if id, ok := s.LHS.(*syntax.Ident); ok && s.Op == syntax.EQ {
				t.assign[id.Name] = s
				t.pos[id.Name] = id.NamePos
			}
		case *syntax.DefStmt:
			t.defs[s.Name.Name] = s
			t.pos[s.Name.Name] = s.Name.NamePos
		}
	}
	if a, ok := t.assign["SEARCH_SPACE"]; ok {
		t.space, issues = t.readSpace(f.Path, a)
	}
	if a, ok := t.assign["FRAGMENTS"]; ok {
		var more []Issue
		t.frags, more = t.readFragments(f.Path, a)
		issues = append(issues, more...)
	}
	return t, issues
}

// exprText returns the source text of an expression.
func (t *topLevel) exprText(e syntax.Expr) string {
	start, end := syntax.Start(e), syntax.End(e)
	a, b := offsetOf(t.src, start), offsetOf(t.src, end)
	if a < 0 || b < a {
		return ""
	}
	return t.src[a:b]
}

// offsetOf converts a Starlark position (1-based line, 1-based rune
// column) to a byte offset in src, or -1.
func offsetOf(src string, p syntax.Position) int {
	line, off := int32(1), 0
	for line < p.Line {
		i := strings.IndexByte(src[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
		line++
	}
	for col := int32(1); col < p.Col; col++ {
		if off >= len(src) {
			return -1
		}
		_, w := utf8.DecodeRuneInString(src[off:])
		off += w
	}
	return off
}

func (t *topLevel) readSpace(file string, a *syntax.AssignStmt) ([]Dimension, []Issue) {
	var issues []Issue
	d, ok := a.RHS.(*syntax.DictExpr)
	if !ok {
		return nil, []Issue{issueAt(file, syntax.Start(a.RHS), "search-space", "SEARCH_SPACE must be a dict literal {\"KNOB\": [choice, ...], ...} so that proposers can read it without running code")}
	}
	var dims []Dimension
	seen := map[string]bool{}
	for _, x := range d.List {
		e := x.(*syntax.DictEntry)
		k, ok := e.Key.(*syntax.Literal)
		name, isStr := "", false
		if ok {
			name, isStr = k.Value.(string)
		}
		if !isStr {
			issues = append(issues, issueAt(file, syntax.Start(e.Key), "search-space", "SEARCH_SPACE keys must be string literals naming top-level assignments"))
			continue
		}
		if seen[name] {
			issues = append(issues, issueAt(file, syntax.Start(e.Key), "search-space", "knob %q listed twice", name))
			continue
		}
		seen[name] = true
		dim := Dimension{Knob: name, Line: int(k.TokenPos.Line)}
		list, ok := e.Value.(*syntax.ListExpr)
		if call, isCall := e.Value.(*syntax.CallExpr); isCall {
			r, problem := readRange(call)
			if problem != "" {
				issues = append(issues, issueAt(file, syntax.Start(e.Value), "search-space", "choices of %q: %s", name, problem))
				continue
			}
			dim.Range = r
			t.ranges[name] = syntax.Start(e.Value)
			for _, v := range r.Values() {
				dim.Choices = append(dim.Choices, strconv.Itoa(v))
			}
			list, ok = &syntax.ListExpr{}, true
		}
		if !ok || (len(list.List) == 0 && dim.Range == nil) {
			issues = append(issues, issueAt(file, syntax.Start(e.Value), "search-space", "choices of %q must be a non-empty list literal or range(lo, hi[, step])", name))
			continue
		}
		if len(list.List) > maxRangeValues {
			issues = append(issues, issueAt(file, syntax.Start(e.Value), "search-space", "choices of %q: %d choices, over the limit of %d", name, len(list.List), maxRangeValues))
			continue
		}
		kinds := map[bool]bool{}
		for _, c := range list.List {
			text := t.exprText(c)
			frag, err := t.choiceKind(c)
			if err != "" {
				issues = append(issues, issueAt(file, syntax.Start(c), "search-space", "choice %s of %q: %s", text, name, err))
				continue
			}
			kinds[frag] = true
			dim.Fragment = frag
			dim.Choices = append(dim.Choices, text)
			t.choices[name] = append(t.choices[name], c)
		}
		if len(kinds) > 1 {
			issues = append(issues, issueAt(file, syntax.Start(list), "search-space", "choices of %q mix literals and fragment names", name))
		}
		if dup := firstDup(dim.Choices); dup != "" {
			issues = append(issues, issueAt(file, syntax.Start(list), "search-space", "choice %s of %q listed twice", dup, name))
		}
		as, ok := t.assign[name]
		if !ok {
			p := syntax.Start(e.Key)
			hint := ""
			if _, isDef := t.defs[name]; isDef {
				hint = fmt.Sprintf("; %s is a def: define the alternatives under other names and write `%s = <choice>`", name, name)
			}
			issues = append(issues, issueAt(file, p, "search-space", "knob %q has no top-level assignment `%s = ...`%s", name, name, hint))
			continue
		}
		dim.Current = t.exprText(as.RHS)
		if dim.Range != nil {
			if n, err := strconv.Atoi(dim.Current); err == nil && dim.Range.Contains(n) {
				dim.Current = strconv.Itoa(n)
			} else {
				issues = append(issues, issueAt(file, syntax.Start(as.RHS), "search-space", "%s = %s is not an int in its SEARCH_SPACE %s", name, dim.Current, dim.Range))
			}
		} else if !slices.Contains(dim.Choices, dim.Current) {
			issues = append(issues, issueAt(file, syntax.Start(as.RHS), "search-space", "%s = %s is not one of its SEARCH_SPACE choices %v", name, dim.Current, dim.Choices))
		}
		dims = append(dims, dim)
	}
	sort.Slice(dims, func(i, j int) bool { return dims[i].Knob < dims[j].Knob })
	return dims, issues
}

// choiceKind says whether a choice expression is a fragment (a name of a
// top-level definition) or a literal; a non-empty string explains why it
// is neither.
func (t *topLevel) choiceKind(e syntax.Expr) (fragment bool, problem string) {
	switch e := e.(type) {
	case *syntax.Literal:
		return false, ""
	case *syntax.UnaryExpr:
		if _, ok := e.X.(*syntax.Literal); ok && e.Op == syntax.MINUS {
			return false, ""
		}
	case *syntax.Ident:
		switch e.Name {
		case "True", "False", "None":
			return false, ""
		}
		if _, ok := t.defs[e.Name]; ok {
			return true, ""
		}
		if _, ok := t.assign[e.Name]; ok {
			return true, ""
		}
		return false, "names no top-level definition"
	}
	return false, "must be a literal or the name of a top-level definition"
}

func firstDup(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// Mutate rewrites the top-level assignment `knob = ...` of src to the given
// choice, which must be one of the knob's SEARCH_SPACE choices as written
// there. The result is normalised source; everything else is kept byte for
// byte.
func Mutate(src, knob, choice string) (string, error) {
	src = Normalize(src)
	f, err := parseSource("mutate.star", src)
	if err != nil {
		return "", fmt.Errorf("harnesses: mutate: parse: %w", err)
	}
	t, issues := readTopLevel(f, src)
	if len(issues) > 0 {
		return "", fmt.Errorf("harnesses: mutate: %w", &LoadError{Issues: issues})
	}
	var dim *Dimension
	for i := range t.space {
		if t.space[i].Knob == knob {
			dim = &t.space[i]
		}
	}
	if dim == nil {
		names := make([]string, len(t.space))
		for i, d := range t.space {
			names[i] = d.Knob
		}
		return "", fmt.Errorf("harnesses: mutate: %q is not a knob of SEARCH_SPACE (knobs: %s)", knob, strings.Join(names, ", "))
	}
	choice = strings.TrimSpace(choice)
	if dim.Range != nil {
		n, err := strconv.Atoi(choice)
		if err != nil || !dim.Range.Contains(n) {
			return "", fmt.Errorf("harnesses: mutate: %s is not a choice of %s: want an int in %s (%s)", choice, knob, dim.Range, dim.Range.Describe())
		}
		choice = strconv.Itoa(n)
	}
	if !slices.Contains(dim.Choices, choice) {
		return "", fmt.Errorf("harnesses: mutate: %s is not a choice of %s (choices: %s)", choice, knob, strings.Join(dim.Choices, ", "))
	}
	as := t.assign[knob]
	a, b := offsetOf(src, syntax.Start(as.RHS)), offsetOf(src, syntax.End(as.RHS))
	if a < 0 || b < a {
		return "", fmt.Errorf("harnesses: mutate: cannot locate the value of %s", knob)
	}
	return Normalize(src[:a] + choice + src[b:]), nil
}

// SpaceOf reads SEARCH_SPACE from a source without running it.
func SpaceOf(src string) ([]Dimension, error) {
	src = Normalize(src)
	f, err := parseSource("space.star", src)
	if err != nil {
		return nil, fmt.Errorf("harnesses: search space: %w", err)
	}
	t, issues := readTopLevel(f, src)
	if len(issues) > 0 {
		return nil, &LoadError{Issues: issues}
	}
	return t.space, nil
}

// syntaxIssues converts parse and resolve errors into issues.
func syntaxIssues(file string, err error) []Issue {
	var se syntax.Error
	if errors.As(err, &se) {
		return []Issue{issueAt(file, se.Pos, "syntax", "%s", se.Msg)}
	}
	var el resolve.ErrorList
	if errors.As(err, &el) {
		out := make([]Issue, len(el))
		for i, e := range el {
			msg := e.Msg
			if strings.HasPrefix(msg, "undefined: ") {
				msg += " (harnesses see only the re, json and math modules and Starlark's builtins; no files, no load)"
			}
			out[i] = issueAt(file, e.Pos, "resolve", "%s", msg)
		}
		return out
	}
	return []Issue{{File: file, Line: 1, Col: 1, Rule: "syntax", Msg: err.Error()}}
}

// evalIssue converts a Starlark execution error to an issue at the
// innermost frame that lies in the harness file.
func evalIssue(file, fn string, err error) Issue {
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		for i := len(ee.CallStack) - 1; i >= 0; i-- {
			fr := ee.CallStack[i]
			if fr.Pos.Filename() == file {
				msg := ee.Msg
				if fn != "" {
					msg = fn + ": " + msg
				}
				return issueAt(file, fr.Pos, "runtime", "%s", msg)
			}
		}
		return Issue{File: file, Line: 1, Col: 1, Rule: "runtime", Msg: ee.Msg}
	}
	return Issue{File: file, Line: 1, Col: 1, Rule: "runtime", Msg: err.Error()}
}

// Variants renders sources that differ from one base only in the values
// of SEARCH_SPACE knobs. It parses the base once, where Mutate parses on
// every call: proposers that weigh many points of a space use it.
type Variants struct {
	src   string
	space []Dimension
	// spans are the byte offsets of each knob's value in src, by knob.
	spans map[string][2]int
	// order lists the knobs by the offset of their values.
	order []string
}

// NewVariants reads the base source's SEARCH_SPACE.
func NewVariants(src string) (*Variants, error) {
	src = Normalize(src)
	f, err := parseSource("variants.star", src)
	if err != nil {
		return nil, fmt.Errorf("harnesses: variants: parse: %w", err)
	}
	t, issues := readTopLevel(f, src)
	if len(issues) > 0 {
		return nil, fmt.Errorf("harnesses: variants: %w", &LoadError{Issues: issues})
	}
	v := &Variants{src: src, space: t.space, spans: map[string][2]int{}}
	for _, d := range t.space {
		as := t.assign[d.Knob]
		a, b := offsetOf(src, syntax.Start(as.RHS)), offsetOf(src, syntax.End(as.RHS))
		if a < 0 || b < a {
			return nil, fmt.Errorf("harnesses: variants: cannot locate the value of %s", d.Knob)
		}
		v.spans[d.Knob] = [2]int{a, b}
		v.order = append(v.order, d.Knob)
	}
	sort.Slice(v.order, func(i, j int) bool { return v.spans[v.order[i]][0] < v.spans[v.order[j]][0] })
	return v, nil
}

// Space is the base's SEARCH_SPACE, by knob.
func (v *Variants) Space() []Dimension { return append([]Dimension(nil), v.space...) }

// Render returns the normalised base source with the given knobs set to
// the given choices (as written in SEARCH_SPACE; any int of a ranged
// knob); the other knobs keep their values.
func (v *Variants) Render(values map[string]string) (string, error) {
	dims := map[string]*Dimension{}
	for i := range v.space {
		dims[v.space[i].Knob] = &v.space[i]
	}
	for knob, choice := range values {
		d := dims[knob]
		if d == nil {
			return "", fmt.Errorf("harnesses: variants: %q is not a knob of SEARCH_SPACE", knob)
		}
		if !slices.Contains(d.Choices, strings.TrimSpace(choice)) {
			if d.Range != nil {
				return "", fmt.Errorf("harnesses: variants: %s is not a choice of %s: want an int in %s (%s)", choice, knob, d.Range, d.Range.Describe())
			}
			return "", fmt.Errorf("harnesses: variants: %s is not a choice of %s (choices: %s)", choice, knob, strings.Join(d.Choices, ", "))
		}
	}
	var b strings.Builder
	b.Grow(len(v.src) + 64)
	at := 0
	for _, knob := range v.order {
		c, ok := values[knob]
		if !ok {
			continue
		}
		sp := v.spans[knob]
		b.WriteString(v.src[at:sp[0]])
		b.WriteString(strings.TrimSpace(c))
		at = sp[1]
	}
	b.WriteString(v.src[at:])
	return Normalize(b.String()), nil
}

// MutateAll sets several knobs of src at once (see Mutate).
func MutateAll(src string, values map[string]string) (string, error) {
	v, err := NewVariants(src)
	if err != nil {
		return "", err
	}
	return v.Render(values)
}
