package harnesses

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.starlark.net/syntax"

	"whale/data"
)

// Fragment metadata: what a named choice of SEARCH_SPACE is for, declared
// in the harness beside the fragments as a dict literal, so that a
// proposer reads it without running code:
//
//	FRAGMENTS = {
//	    "_vote_logprob": {"targets": ["wrong"], "requires": {"SAMPLES": range(4, 9)}},
//	    "MAX_TURNS": {"targets": ["turn_limit"]},      # every choice of a knob
//	    "MAX_TURNS=2": {"targets": []},                # one literal choice
//	}
//
// A key is a fragment (a top-level name that is a choice of some knob), a
// knob (its metadata covers every choice without its own entry), or
// "KNOB=choice" for one literal choice. "targets" lists the failure kinds
// the choice addresses; "requires" the settings of other knobs it needs
// (choices as written in SEARCH_SPACE, or a range for a ranged knob).

// Fragment is one FRAGMENTS entry.
type Fragment struct {
	// Key is the entry's key as written.
	Key string `json:"key"`
	// Knob is the knob the entry is about; Choice the choice as written
	// in SEARCH_SPACE, "" for an entry covering the whole knob.
	Knob   string `json:"knob"`
	Choice string `json:"choice,omitempty"`
	// Targets are failure kinds (data.FailureKinds or harness_error).
	Targets  []string      `json:"targets,omitempty"`
	Requires []Requirement `json:"requires,omitempty"`
	Line     int           `json:"line"`
}

// Requirement is one knob setting a fragment needs: Knob must hold one
// of Choices (as written in SEARCH_SPACE; a range is listed in full).
type Requirement struct {
	Knob    string    `json:"knob"`
	Choices []string  `json:"choices"`
	Range   *IntRange `json:"range,omitempty"`
}

func (r Requirement) String() string {
	if r.Range != nil {
		return r.Knob + " in " + r.Range.String()
	}
	return r.Knob + " in [" + strings.Join(r.Choices, ", ") + "]"
}

// Satisfied reports whether a knob value (as written) meets r.
func (r Requirement) Satisfied(value string) bool { return slices.Contains(r.Choices, value) }

// FragmentFor returns the metadata that applies to a knob's choice: the
// choice's own entry, else the knob's.
func FragmentFor(frags []Fragment, knob, choice string) (Fragment, bool) {
	var whole *Fragment
	for i, f := range frags {
		if f.Knob != knob {
			continue
		}
		if f.Choice == choice {
			return f, true
		}
		if f.Choice == "" {
			whole = &frags[i]
		}
	}
	if whole != nil {
		return *whole, true
	}
	return Fragment{}, false
}

// SatisfyRequires applies the requirements of every knob's value in point
// (knob -> choice as written), changing knobs that fixed does not hold to
// a value pick chooses; it sets each knob it changes in fixed. It reports
// false when a requirement falls on a fixed knob or the requirements do
// not settle within a few passes. Knobs are visited in sorted order, so
// the result depends only on point, fixed and pick.
func SatisfyRequires(frags []Fragment, point map[string]string, fixed map[string]bool, pick func(Requirement, string) string) bool {
	keys := make([]string, 0, len(point))
	for k := range point {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for pass := 0; pass < 4; pass++ {
		changed := false
		for _, k := range keys {
			fr, ok := FragmentFor(frags, k, point[k])
			if !ok {
				continue
			}
			for _, r := range fr.Requires {
				if r.Satisfied(point[r.Knob]) {
					continue
				}
				if fixed[r.Knob] {
					return false
				}
				point[r.Knob] = pick(r, point[r.Knob])
				fixed[r.Knob] = true
				changed = true
			}
		}
		if !changed {
			return true
		}
	}
	return false
}

// FragmentsOf reads FRAGMENTS from a source without running it; nil when
// the harness declares none.
func FragmentsOf(src string) ([]Fragment, error) {
	src = Normalize(src)
	f, err := parseSource("fragments.star", src)
	if err != nil {
		return nil, fmt.Errorf("harnesses: fragments: %w", err)
	}
	t, issues := readTopLevel(f, src)
	if len(issues) > 0 {
		return nil, &LoadError{Issues: issues}
	}
	return t.frags, nil
}

// Fragments lists the harness's FRAGMENTS entries, in source order.
func (h *Harness) Fragments() []Fragment { return append([]Fragment(nil), h.frags...) }

// KnownFailureKinds are the names a fragment may target.
func KnownFailureKinds() []string {
	out := make([]string, 0, len(data.FailureKinds)+1)
	for _, k := range data.FailureKinds {
		out = append(out, string(k))
	}
	return append(out, string(FailHarness))
}

// IntRange is a ranged numeric knob: the ints Lo, Lo+Step, ... below Hi,
// as Starlark's range(Lo, Hi, Step).
type IntRange struct {
	Lo   int `json:"lo"`
	Hi   int `json:"hi"`
	Step int `json:"step"`
}

// maxRangeValues bounds a ranged knob: its values are listed as choices.
const maxRangeValues = 256

// Contains reports whether n is one of the range's values.
func (r IntRange) Contains(n int) bool {
	return n >= r.Lo && n < r.Hi && (n-r.Lo)%r.Step == 0
}

// Values lists the range's values in order.
func (r IntRange) Values() []int {
	var out []int
	for v := r.Lo; v < r.Hi; v += r.Step {
		out = append(out, v)
	}
	return out
}

func (r IntRange) String() string {
	if r.Step == 1 {
		return fmt.Sprintf("range(%d, %d)", r.Lo, r.Hi)
	}
	return fmt.Sprintf("range(%d, %d, %d)", r.Lo, r.Hi, r.Step)
}

// Describe says the range in words ("1..8", "128..1024 in steps of 128").
func (r IntRange) Describe() string {
	vs := r.Values()
	last := vs[len(vs)-1]
	if r.Step == 1 {
		return fmt.Sprintf("%d..%d", r.Lo, last)
	}
	return fmt.Sprintf("%d..%d in steps of %d", r.Lo, last, r.Step)
}

// readRange reads `range(hi)`, `range(lo, hi)` or `range(lo, hi, step)`
// with int literal arguments; a non-empty problem says why it is not one.
func readRange(c *syntax.CallExpr) (*IntRange, string) {
	fn, ok := c.Fn.(*syntax.Ident)
	if !ok || fn.Name != "range" || len(c.Args) < 1 || len(c.Args) > 3 {
		return nil, "must be a list literal or range(lo, hi[, step]) with int literals"
	}
	var args []int
	for _, a := range c.Args {
		n, ok := intLiteral(a)
		if !ok {
			return nil, "range arguments must be int literals"
		}
		args = append(args, n)
	}
	r := IntRange{Hi: args[0], Step: 1}
	if len(args) >= 2 {
		r.Lo, r.Hi = args[0], args[1]
	}
	if len(args) == 3 {
		r.Step = args[2]
	}
	switch {
	case r.Step <= 0:
		return nil, "range step must be positive"
	case r.Hi <= r.Lo:
		return nil, fmt.Sprintf("%s is empty", r)
	case (r.Hi-r.Lo+r.Step-1)/r.Step > maxRangeValues:
		return nil, fmt.Sprintf("%s has more than %d values", r, maxRangeValues)
	}
	return &r, ""
}

func intLiteral(e syntax.Expr) (int, bool) {
	neg := false
	if u, ok := e.(*syntax.UnaryExpr); ok && u.Op == syntax.MINUS {
		neg, e = true, u.X
	}
	l, ok := e.(*syntax.Literal)
	if !ok {
		return 0, false
	}
	n, ok := l.Value.(int64)
	if !ok {
		return 0, false
	}
	if neg {
		n = -n
	}
	return int(n), true
}

// readFragments reads and checks FRAGMENTS against SEARCH_SPACE: every
// key names a fragment, knob or knob=choice of the space; every target a
// failure kind; every requirement another knob's choices.
func (t *topLevel) readFragments(file string, a *syntax.AssignStmt) ([]Fragment, []Issue) {
	r := &fragReader{t: t, file: file, dims: map[string]*Dimension{}, owner: map[string]string{}, kinds: KnownFailureKinds()}
	d, ok := a.RHS.(*syntax.DictExpr)
	if !ok {
		r.bad(a.RHS, "FRAGMENTS must be a dict literal {\"_fragment\": {\"targets\": [...], \"requires\": {...}}, ...} so that proposers can read it without running code")
		return nil, r.issues
	}
	for i := range t.space {
		dim := &t.space[i]
		r.dims[dim.Knob] = dim
		if dim.Fragment {
			for _, c := range dim.Choices {
				if _, ok := r.owner[c]; !ok {
					r.owner[c] = dim.Knob
				}
			}
		}
	}
	var out []Fragment
	seen := map[string]bool{}
	for _, x := range d.List {
		e := x.(*syntax.DictEntry)
		key, ok := stringLiteral(e.Key)
		if !ok {
			r.bad(e.Key, "FRAGMENTS keys must be string literals naming a fragment, a knob or \"KNOB=choice\"")
			continue
		}
		if seen[key] {
			r.bad(e.Key, "fragment %q listed twice", key)
			continue
		}
		seen[key] = true
		fr := Fragment{Key: key, Line: int(syntax.Start(e.Key).Line)}
		if !r.resolve(e.Key, key, &fr) {
			continue
		}
		meta, ok := e.Value.(*syntax.DictExpr)
		if !ok {
			r.bad(e.Value, "metadata of %q must be a dict literal {\"targets\": [...], \"requires\": {...}}", key)
			continue
		}
		r.readMeta(meta, key, &fr)
		out = append(out, fr)
	}
	return out, r.issues
}

// fragReader collects the issues of one FRAGMENTS literal.
type fragReader struct {
	t      *topLevel
	file   string
	issues []Issue
	dims   map[string]*Dimension
	owner  map[string]string // fragment name → the first knob (by name) listing it
	kinds  []string
}

func (r *fragReader) bad(e syntax.Node, format string, args ...any) {
	start, _ := e.Span()
	r.issues = append(r.issues, issueAt(r.file, start, "fragments", format, args...))
}

// resolve sets fr's knob and choice from its key — "KNOB=choice", a knob
// or a fragment choice — and reports whether the key names one.
func (r *fragReader) resolve(at syntax.Expr, key string, fr *Fragment) bool {
	switch knob, choice, isPair := strings.Cut(key, "="); {
	case isPair:
		knob, choice = strings.TrimSpace(knob), strings.TrimSpace(choice)
		dim := r.dims[knob]
		if dim == nil {
			r.bad(at, "%q: unknown knob %q (not in SEARCH_SPACE)", key, knob)
			return false
		}
		if dim.Range != nil {
			if n, err := strconv.Atoi(choice); err == nil {
				choice = strconv.Itoa(n)
			}
		}
		if !slices.Contains(dim.Choices, choice) {
			r.bad(at, "%q: %s is not a choice of %s (choices: %s)", key, choice, knob, choicesText(dim))
			return false
		}
		fr.Knob, fr.Choice = knob, choice
	case r.dims[key] != nil:
		fr.Knob = key
	case r.owner[key] != "":
		fr.Knob, fr.Choice = r.owner[key], key
	default:
		hint := ""
		if _, defined := r.t.pos[key]; defined {
			hint = "; add it to a knob's choices in SEARCH_SPACE"
		}
		r.bad(at, "unknown fragment %q: it is no knob of SEARCH_SPACE and no choice of one%s", key, hint)
		return false
	}
	return true
}

// readMeta reads a fragment's targets and requirements into fr.
func (r *fragReader) readMeta(meta *syntax.DictExpr, key string, fr *Fragment) {
	t, kinds := r.t, r.kinds
	for _, y := range meta.List {
		me := y.(*syntax.DictEntry)
		field, _ := stringLiteral(me.Key)
		switch field {
		case "targets":
			list, ok := me.Value.(*syntax.ListExpr)
			if !ok {
				r.bad(me.Value, "targets of %q must be a list of failure kinds (%s)", key, strings.Join(kinds, ", "))
				continue
			}
			for _, it := range list.List {
				s, ok := stringLiteral(it)
				if !ok || !slices.Contains(kinds, s) {
					r.bad(it, "targets of %q: unknown failure kind %s (known: %s)", key, t.exprText(it), strings.Join(kinds, ", "))
					continue
				}
				fr.Targets = append(fr.Targets, s)
			}
		case "requires":
			req, ok := me.Value.(*syntax.DictExpr)
			if !ok {
				r.bad(me.Value, "requires of %q must be a dict literal {\"KNOB\": [choice, ...]}", key)
				continue
			}
			for _, z := range req.List {
				rq, problem := t.readRequirement(z.(*syntax.DictEntry), r.dims, fr.Knob)
				if problem != "" {
					r.bad(z, "requires of %q: %s", key, problem)
					continue
				}
				fr.Requires = append(fr.Requires, rq)
			}
		default:
			r.bad(me.Key, "metadata of %q: unknown field %s; want \"targets\" or \"requires\"", key, t.exprText(me.Key))
		}
	}
}

func (t *topLevel) readRequirement(e *syntax.DictEntry, dims map[string]*Dimension, self string) (Requirement, string) {
	knob, ok := stringLiteral(e.Key)
	if !ok {
		return Requirement{}, "keys must be string literals naming knobs"
	}
	dim := dims[knob]
	switch {
	case dim == nil:
		return Requirement{}, fmt.Sprintf("unknown knob %q (not in SEARCH_SPACE)", knob)
	case knob == self:
		return Requirement{}, fmt.Sprintf("a fragment of %s cannot require %s itself", knob, knob)
	}
	r := Requirement{Knob: knob}
	var texts []string
	switch v := e.Value.(type) {
	case *syntax.ListExpr:
		for _, it := range v.List {
			text := t.exprText(it)
			if n, ok := intLiteral(it); ok && dim.Range != nil {
				text = strconv.Itoa(n)
			}
			texts = append(texts, text)
		}
	case *syntax.CallExpr:
		rg, problem := readRange(v)
		if problem != "" {
			return r, fmt.Sprintf("%s: %s", knob, problem)
		}
		r.Range = rg
		for _, n := range rg.Values() {
			texts = append(texts, strconv.Itoa(n))
		}
	default:
		return r, fmt.Sprintf("%s: want a list of its choices or a range", knob)
	}
	if len(texts) == 0 {
		return r, fmt.Sprintf("%s: no choices", knob)
	}
	for _, text := range texts {
		if !slices.Contains(dim.Choices, text) {
			return r, fmt.Sprintf("%s is not a choice of %s (choices: %s)", text, knob, choicesText(dim))
		}
		r.Choices = append(r.Choices, text)
	}
	return r, ""
}

func stringLiteral(e syntax.Expr) (string, bool) {
	l, ok := e.(*syntax.Literal)
	if !ok {
		return "", false
	}
	s, ok := l.Value.(string)
	return s, ok
}

// choicesText lists a dimension's choices for a message, a range as such.
func choicesText(d *Dimension) string {
	if d.Range != nil {
		return d.Range.String()
	}
	var cs []string
	for _, c := range d.Choices {
		cs = append(cs, strings.ReplaceAll(clip(c), "\n", `\n`))
	}
	return strings.Join(cs, ", ")
}
