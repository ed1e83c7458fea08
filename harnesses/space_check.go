package harnesses

import (
	"fmt"
	"math/big"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// SEARCH_SPACE against the contract: every choice a proposer may draw is
// checked as if it were the knob's value, with the same rules as the
// harness's own values, so a search never draws a candidate that cannot
// load (MAX_TURNS 99, SAMPLES 1000, range(-5, 5), a parser of the wrong
// arity). Domain knobs (RETRIEVE_K and the like) have no contract range
// and are not checked here.

// intBounds is the allowed range of a contract int, false for a name that
// is not one.
func intBounds(name string, env Env) (lo, hi int, ok bool) {
	switch name {
	case "FORMAT_RETRY_BUDGET", "INVALID_RETRY_BUDGET":
		return 0, MaxRetryBudget, true
	case "MAX_TURNS":
		return 1, max(1, 2*env.DefaultMaxTurns), true
	case "CONTEXT_TOKENS":
		return MinContextTokens, MaxContextTokens, true
	case "SAMPLES":
		return 1, MaxSamples, true
	}
	return 0, 0, false
}

// contractInt reads a contract int global within its bounds.
func (c *contract) contractInt(name string) int {
	lo, hi, ok := intBounds(name, c.h.Env)
	if !ok {
		panic("harnesses: " + name + " is not a contract int")
	}
	return c.intIn(name, lo, hi)
}

// checkKnob applies the contract rule of name (if it has one) to its
// present global value.
func (c *contract) checkKnob(name string) {
	if _, _, ok := intBounds(name, c.h.Env); ok {
		c.contractInt(name)
		return
	}
	switch name {
	case "SYSTEM_PROMPT":
		c.str(name, true, "")
	case "USER_PROMPT":
		if s, ok := c.h.globals[name].(starlark.String); ok && len(s) <= maxPromptBytes && !strings.Contains(string(s), "{observation}") {
			c.bad(name, "contract", "USER_PROMPT must contain {observation}, where the formatted observation goes")
			return
		}
		c.str(name, true, "")
	case "FORMAT_RETRY_MESSAGE", "INVALID_RETRY_MESSAGE":
		c.str(name, false, "")
	case "TOOLS":
		c.tools()
	default:
		if n, ok := requiredFuncs[name]; ok {
			c.fn(name, n, true)
		} else if n, ok := optionalFuncs[name]; ok {
			c.fn(name, n, false)
		}
	}
}

// checkSpace checks every SEARCH_SPACE choice of a loaded harness against
// the contract and reports each one that breaks it at the choice (a
// range's bad values together, at the range).
func (h *Harness) checkSpace(t *topLevel) []Issue {
	var issues []Issue
	for _, d := range h.space {
		var bad []string
		var first Issue
		for i, choice := range d.Choices {
			if choice == d.Current {
				continue // the harness's own value, checked already
			}
			var expr syntax.Expr
			if d.Range == nil && i < len(t.choices[d.Knob]) {
				expr = t.choices[d.Knob][i]
			}
			v, err := h.choiceValue(d, choice, expr)
			if err != nil {
				issues = append(issues, issueAt(h.File, syntax.Start(expr), "search-space", "choice %s of %q: %v", choice, d.Knob, err))
				continue
			}
			is := h.checkChoice(t, d.Knob, v)
			if len(is) == 0 {
				continue
			}
			if d.Range != nil {
				if len(bad) == 0 {
					first = is[0]
				}
				bad = append(bad, choice)
				continue
			}
			for _, x := range is {
				issues = append(issues, issueAt(h.File, syntax.Start(expr), "search-space", "choice %s of %q breaks the contract: %s", clip(choice), d.Knob, x.Msg))
			}
		}
		if len(bad) > 0 {
			issues = append(issues, issueAt(h.File, t.ranges[d.Knob], "search-space", "%s of %q holds %d values that break the contract (%s); the first: %s",
				d.Range, d.Knob, len(bad), clipList(bad), first.Msg))
		}
	}
	return issues
}

// checkChoice is the contract's verdict on name holding v, the other
// globals as they are.
func (h *Harness) checkChoice(t *topLevel, name string, v starlark.Value) []Issue {
	g := make(starlark.StringDict, len(h.globals))
	for k, x := range h.globals {
		g[k] = x
	}
	g[name] = v
	c := &contract{h: &Harness{File: h.File, Env: h.Env, globals: g, fns: map[string]*starlark.Function{}}, t: t}
	c.checkKnob(name)
	return c.issues
}

// choiceValue is the value a choice gives its knob: an int of a range, a
// literal, or the value of the top-level name it names.
func (h *Harness) choiceValue(d Dimension, choice string, e syntax.Expr) (starlark.Value, error) {
	if d.Range != nil {
		var n int
		if _, err := fmt.Sscan(choice, &n); err != nil {
			return nil, err
		}
		return starlark.MakeInt(n), nil
	}
	neg := false
	if u, ok := e.(*syntax.UnaryExpr); ok && u.Op == syntax.MINUS {
		neg, e = true, u.X
	}
	switch e := e.(type) {
	case *syntax.Literal:
		switch x := e.Value.(type) {
		case string:
			return starlark.String(x), nil
		case int64:
			if neg {
				x = -x
			}
			return starlark.MakeInt64(x), nil
		case *big.Int:
			if neg {
				x = new(big.Int).Neg(x)
			}
			return starlark.MakeBigInt(x), nil
		case float64:
			if neg {
				x = -x
			}
			return starlark.Float(x), nil
		}
	case *syntax.Ident:
		switch e.Name {
		case "True":
			return starlark.True, nil
		case "False":
			return starlark.False, nil
		case "None":
			return starlark.None, nil
		}
		if v, ok := h.globals[e.Name]; ok {
			return v, nil
		}
		return nil, fmt.Errorf("names no top-level definition")
	}
	return nil, fmt.Errorf("is not a literal or a top-level name")
}

func clipList(xs []string) string {
	s := ""
	for i, x := range xs {
		if i == 4 {
			return s + fmt.Sprintf(", … %d more", len(xs)-4)
		}
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}
