package harnesses

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"whale/data"
)

// Env is what validation needs to know about a domain.
type Env struct {
	Domain string
	// Tools are the names of the tools the domain offers, with their
	// one-line descriptions for prompts.
	Tools           []string
	ToolDescs       map[string]string
	DefaultMaxTurns int
}

// EnvOf describes a domain for validation.
func EnvOf(d data.Domain) Env {
	e := Env{Domain: d.Name(), DefaultMaxTurns: d.DefaultMaxTurns(), ToolDescs: map[string]string{}}
	for _, t := range d.Tools() {
		e.Tools = append(e.Tools, t.Name())
		e.ToolDescs[t.Name()] = t.Description()
	}
	return e
}

// Ranges the validator enforces. Out of range is refused, never clamped
// silently, with the allowed range named.
const (
	MaxRetryBudget   = 10
	MinContextTokens = 128
	MaxContextTokens = 32768
	maxPromptBytes   = 16 << 10
)

// Default retry messages, used when a harness does not set its own.
const (
	DefaultFormatRetryMessage  = "Your reply could not be parsed. Reply again in the required format."
	DefaultInvalidRetryMessage = "That action is not valid here: {action}. Choose a valid one."
)

// Contract function names and their arities.
var (
	requiredFuncs = map[string]int{"format_observation": 2, "parse_action": 1, "is_valid_action": 2}
	optionalFuncs = map[string]int{"format_tool_result": 3, "next_step": 1, "compact_history": 2, "aggregate": 2}
	signatures    = map[string]string{"format_observation": "(obs, state)", "parse_action": "(text)", "is_valid_action": "(obs, action)",
		"format_tool_result": "(name, result, state)", "next_step": "(state)", "compact_history": "(messages, state)",
		"aggregate": "(candidates, state)"}
	contractNames = []string{"SYSTEM_PROMPT", "USER_PROMPT", "FORMAT_RETRY_BUDGET", "INVALID_RETRY_BUDGET", "MAX_TURNS", "TOOLS", "CONTEXT_TOKENS",
		"format_observation", "parse_action", "is_valid_action", "format_tool_result", "next_step", "compact_history",
		"FORMAT_RETRY_MESSAGE", "INVALID_RETRY_MESSAGE", "SEARCH_SPACE", "SAMPLES", "aggregate", "FRAGMENTS"}
)

// Harness is a loaded, validated harness. Its globals are frozen, so one
// Harness may serve many episodes; per-episode data lives in each
// episode's state dict.
type Harness struct {
	// File is the name errors use (a path or "h0.star").
	File string
	// Source is the normalised source; Hash its sha256.
	Source string
	Hash   string
	Env    Env

	SystemPrompt       string
	UserPrompt         string
	FormatRetryBudget  int
	InvalidRetryBudget int
	MaxTurns           int
	Tools              []string
	ContextTokens      int
	// Samples is SAMPLES: completions drawn at each model call, of which
	// aggregate picks one (1 when the harness does not set it).
	Samples             int
	FormatRetryMessage  string
	InvalidRetryMessage string

	globals starlark.StringDict
	fns     map[string]*starlark.Function
	knobs   []Knob
	space   []Dimension
	frags   []Fragment
}

// Knob is a top-level constant of a harness or a SEARCH_SPACE knob, with
// its present value.
type Knob struct {
	Name string `json:"name"`
	// Source is the value as written.
	Source string `json:"source"`
	// Value is the evaluated value for plain data (numbers, strings,
	// bools, lists of those); for a fragment it is the fragment's name.
	Value   any  `json:"value"`
	Line    int  `json:"line"`
	InSpace bool `json:"in_space"`
}

// Knobs lists the harness's constants (UPPERCASE top-level names holding
// plain data) and SEARCH_SPACE knobs, by name.
func (h *Harness) Knobs() []Knob { return append([]Knob(nil), h.knobs...) }

// SearchSpace lists the knobs a proposer may vary, by name.
func (h *Harness) SearchSpace() []Dimension { return append([]Dimension(nil), h.space...) }

// Load parses, lints, runs the top level of and validates a harness
// against a domain. Every problem is reported (as a *LoadError) with
// file:line:col and the rule it broke.
func Load(file, src string, env Env) (*Harness, error) {
	return load(file, src, env, true)
}

// LoadDrawn loads a harness drawn from a search: its own values are held
// to the whole contract, the other choices of its SEARCH_SPACE are not
// (each is checked when a proposer draws it). A run resumed with an
// incumbent stored before SEARCH_SPACE was checked goes on with it, and
// its out-of-contract choices are refused one by one when drawn.
func LoadDrawn(file, src string, env Env) (*Harness, error) {
	return load(file, src, env, false)
}

func load(file, src string, env Env, space bool) (*Harness, error) {
	if len(src) > maxSourceBytes {
		return nil, &LoadError{Issues: []Issue{{File: file, Line: 1, Col: 1, Rule: "size", Msg: fmt.Sprintf("source is %d bytes, over the limit of %d", len(src), maxSourceBytes)}}}
	}
	src = Normalize(src)
	f, err := parseSource(file, src)
	if err != nil {
		return nil, &LoadError{Issues: syntaxIssues(file, err)}
	}
	issues := lintFile(file, f)
	t, spaceIssues := readTopLevel(f, src)
	issues = append(issues, spaceIssues...)
	if len(issues) > 0 {
		return nil, &LoadError{Issues: issues}
	}
	rewriteFile(f)
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		return nil, &LoadError{Issues: syntaxIssues(file, err)}
	}
	th, stop := newThread(file+":load", LoadSteps)
	globals, err := prog.Init(th, predeclared)
	stop()
	if err != nil {
		is := evalIssue(file, "", err)
		if strings.Contains(is.Msg, "too many steps") {
			is.Msg += fmt.Sprintf(" (top-level code may run at most %d steps)", LoadSteps)
		}
		return nil, &LoadError{Issues: []Issue{is}}
	}
	globals.Freeze()
	h := &Harness{File: file, Source: src, Hash: Hash(src), Env: env, globals: globals, fns: map[string]*starlark.Function{}, space: t.space, frags: t.frags}
	if issues := h.validate(t, space); len(issues) > 0 {
		return nil, &LoadError{Issues: issues}
	}
	return h, nil
}

// validate checks the contract: names, types, ranges, tools.
func (h *Harness) validate(t *topLevel, space bool) []Issue {
	c := &contract{h: h, t: t}
	h.SystemPrompt = c.str("SYSTEM_PROMPT", true, "")
	h.UserPrompt = c.str("USER_PROMPT", true, "")
	if _, ok := h.globals["USER_PROMPT"].(starlark.String); ok && !strings.Contains(h.UserPrompt, "{observation}") {
		c.bad("USER_PROMPT", "contract", "USER_PROMPT must contain {observation}, where the formatted observation goes")
	}
	h.FormatRetryMessage = c.str("FORMAT_RETRY_MESSAGE", false, DefaultFormatRetryMessage)
	h.InvalidRetryMessage = c.str("INVALID_RETRY_MESSAGE", false, DefaultInvalidRetryMessage)
	h.FormatRetryBudget = c.contractInt("FORMAT_RETRY_BUDGET")
	h.InvalidRetryBudget = c.contractInt("INVALID_RETRY_BUDGET")
	h.MaxTurns = c.contractInt("MAX_TURNS")
	h.ContextTokens = c.contractInt("CONTEXT_TOKENS")
	h.Samples = 1
	if _, ok := h.globals["SAMPLES"]; ok {
		h.Samples = c.contractInt("SAMPLES")
	}
	c.tools()
	for _, name := range slices.Sorted(maps.Keys(requiredFuncs)) {
		c.fn(name, requiredFuncs[name], true)
	}
	for _, name := range slices.Sorted(maps.Keys(optionalFuncs)) {
		c.fn(name, optionalFuncs[name], false)
	}
	if v, ok := h.globals["SEARCH_SPACE"]; ok {
		if _, ok := v.(*starlark.Dict); !ok {
			c.bad("SEARCH_SPACE", "search-space", "SEARCH_SPACE must be a dict, not %s", v.Type())
		}
	}
	h.knobs = h.readKnobs(t)
	if len(c.issues) == 0 && space {
		c.issues = h.checkSpace(t)
	}
	return c.issues
}

// contract collects the issues of one harness's top-level names.
type contract struct {
	h      *Harness
	t      *topLevel
	issues []Issue
}

// at is where name is defined (the file's start if it is not).
func (c *contract) at(name string) syntax.Position {
	if p, ok := c.t.pos[name]; ok {
		return p
	}
	return syntax.MakePosition(&c.h.File, 1, 1)
}

func (c *contract) bad(name, rule, format string, args ...any) {
	c.issues = append(c.issues, issueAt(c.h.File, c.at(name), rule, format, args...))
}

// missing reports a required name that is not defined, with the nearest
// defined name when one is close.
func (c *contract) missing(name, what string) {
	msg := fmt.Sprintf("missing %s %s", what, name)
	if i := strings.IndexByte(name, '('); i >= 0 {
		name = name[:i]
	}
	if near := nearName(name, c.h.globals); near != "" {
		msg += fmt.Sprintf(" (did you mean %s, defined at line %d?)", near, c.t.pos[near].Line)
	}
	c.issues = append(c.issues, Issue{File: c.h.File, Line: 1, Col: 1, Rule: "contract", Msg: msg})
}

// str reads a string global (def when absent or wrong).
func (c *contract) str(name string, required bool, def string) string {
	v, ok := c.h.globals[name]
	if !ok {
		if required {
			c.missing(name, "string")
		}
		return def
	}
	s, ok := v.(starlark.String)
	if !ok {
		c.bad(name, "contract", "%s must be a string, not %s", name, v.Type())
		return def
	}
	if len(s) > maxPromptBytes {
		c.bad(name, "range", "%s is %d bytes; allowed 0..%d", name, len(s), maxPromptBytes)
	}
	return string(s)
}

// intIn reads a required int global in [lo, hi] (lo when absent or wrong).
func (c *contract) intIn(name string, lo, hi int) int {
	v, ok := c.h.globals[name]
	if !ok {
		c.missing(name, "int")
		return lo
	}
	i, ok := v.(starlark.Int)
	if !ok {
		c.bad(name, "contract", "%s must be an int, not %s", name, v.Type())
		return lo
	}
	n, ok := i.Int64()
	if !ok || n < int64(lo) || n > int64(hi) {
		c.bad(name, "range", "%s = %s is out of range; allowed %d..%d", name, i.String(), lo, hi)
		return lo
	}
	return int(n)
}

// tools reads TOOLS: names the domain offers, each once.
func (c *contract) tools() {
	h := c.h
	v, ok := h.globals["TOOLS"]
	if !ok {
		c.missing("TOOLS", "list of tool names")
		return
	}
	seq, ok := v.(starlark.Indexable)
	if !ok || (v.Type() != "list" && v.Type() != "tuple") {
		c.bad("TOOLS", "contract", "TOOLS must be a list of tool names, not %s", v.Type())
		return
	}
	seen := map[string]bool{}
	for i := 0; i < seq.Len(); i++ {
		s, ok := seq.Index(i).(starlark.String)
		if !ok {
			c.bad("TOOLS", "contract", "TOOLS[%d] must be a string, not %s", i, seq.Index(i).Type())
			continue
		}
		name := string(s)
		if !slices.Contains(h.Env.Tools, name) {
			c.bad("TOOLS", "tools", "tool %q is not offered by domain %s (it offers: %s)", name, h.Env.Domain, strings.Join(h.Env.Tools, ", "))
			continue
		}
		if !seen[name] {
			h.Tools = append(h.Tools, name)
		}
		seen[name] = true
	}
}

// fn checks that name is a function of arity parameters and binds it.
func (c *contract) fn(name string, arity int, required bool) {
	h := c.h
	v, ok := h.globals[name]
	if !ok {
		if required {
			c.missing(name+signatures[name], "function")
		}
		return
	}
	fn, ok := v.(*starlark.Function)
	if !ok {
		c.bad(name, "contract", "%s must be a function taking %d parameters, not %s", name, arity, v.Type())
		return
	}
	if fn.NumParams() != arity && !(fn.HasVarargs() && fn.NumParams()-1 <= arity) {
		c.issues = append(c.issues, issueAt(h.File, fn.Position(), "contract", "%s (bound to %s) must take %d parameters %s, it takes %d", name, fn.Name(), arity, signatures[name], fn.NumParams()))
		return
	}
	h.fns[name] = fn
}

func (h *Harness) readKnobs(t *topLevel) []Knob {
	inSpace := map[string]bool{}
	// Fragments (the alternatives a fragment knob chooses between) are
	// not knobs themselves.
	fragment := map[string]bool{}
	for _, d := range h.space {
		inSpace[d.Knob] = true
		if d.Fragment {
			for _, c := range d.Choices {
				fragment[c] = true
			}
		}
	}
	var out []Knob
	for name, as := range t.assign {
		upper := name == strings.ToUpper(name) && name != "SEARCH_SPACE" && name != "FRAGMENTS" && !strings.HasPrefix(name, "_")
		if (!upper && !inSpace[name]) || (fragment[name] && !inSpace[name]) {
			continue
		}
		v := h.globals[name]
		k := Knob{Name: name, Source: t.exprText(as.RHS), Line: int(t.pos[name].Line), InSpace: inSpace[name]}
		if fn, ok := v.(*starlark.Function); ok {
			k.Value = fn.Name()
		} else if g, err := toGo(v, 0); err == nil {
			k.Value = g
		} else {
			continue
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// nearName finds a defined global within edit distance 2 of a missing
// contract name: the usual cause of a "missing" error is a typo.
func nearName(want string, globals starlark.StringDict) string {
	best, bestD := "", 3
	for name := range globals {
		if slices.Contains(contractNames, name) {
			continue
		}
		if d := editDistance(strings.ToLower(want), strings.ToLower(name)); d < bestD || (d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// call runs one contract function under a fresh step budget and checks
// the size of what it returns. Errors name the harness line.
func (h *Harness) call(name string, args ...starlark.Value) (starlark.Value, error) {
	fn := h.fns[name]
	if fn == nil {
		panic("harnesses: call of unvalidated function " + name)
	}
	th, stop := newThread(h.File+":"+name, CallSteps)
	v, err := starlark.Call(th, fn, args, nil)
	stop()
	if err != nil {
		is := evalIssue(h.File, name, err)
		if strings.Contains(is.Msg, "too many steps") {
			is.Msg += fmt.Sprintf(" (each call may run at most %d steps)", CallSteps)
		}
		return nil, fmt.Errorf("%s", is.String())
	}
	if n := sizeOf(v, MaxValueBytes); n > MaxValueBytes {
		p := fn.Position()
		return nil, fmt.Errorf("%s:%d:%d: runtime: %s returned a value of about %d bytes, over the limit of %d", h.File, p.Line, p.Col, name, n, MaxValueBytes)
	}
	return v, nil
}

func (h *Harness) has(name string) bool { return h.fns[name] != nil }

// where is "file:line:col" of the definition bound to a contract name, for
// run-time errors about what that function returned.
func (h *Harness) where(name string) string {
	if fn := h.fns[name]; fn != nil {
		p := fn.Position()
		return fmt.Sprintf("%s:%d:%d", h.File, p.Line, p.Col)
	}
	return h.File
}

// ParseAction runs the harness's parse_action on a completion text outside
// any episode: the engine uses it to re-verify a stored sample under a
// newer harness (would this harness read the same action from the same
// text?). A nil action means the harness finds none.
func (h *Harness) ParseAction(text string) (*data.Action, error) {
	v, err := h.call("parse_action", starlark.String(text))
	if err != nil {
		return nil, err
	}
	return toAction(h.where("parse_action"), "parse_action", v)
}
