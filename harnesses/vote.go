package harnesses

import (
	"fmt"
	"math"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// MaxSamples bounds SAMPLES: the completions a harness may ask for at one
// model call of an episode (test-time compute). Each is a model call the
// budget pays for.
const MaxSamples = 16

// voteModule holds the built-in aggregators. Each takes the candidates
// list aggregate receives and returns one of its items, never a new one.
var voteModule = &starlarkstruct.Module{Name: "vote", Members: starlark.StringDict{
	"plurality":        voteBuiltin("vote.plurality", false, false),
	"plurality_valid":  voteBuiltin("vote.plurality_valid", true, false),
	"logprob_weighted": voteBuiltin("vote.logprob_weighted", true, true),
	"key":              starlark.NewBuiltin("vote.key", voteKeyBuiltin),
}}

// ActionKey is the identity two actions share when they say the same
// thing: the kind and the normalised answer, or the tool and its args.
func ActionKey(kind, text, tool, args string) string {
	if kind == "tool" {
		return "tool:" + strings.TrimSpace(tool) + ":" + strings.Join(strings.Fields(args), " ")
	}
	return kind + ":" + NormalizeAnswer(text)
}

// actionKeyOf reads the key of a parsed action value (a dict or None).
func actionKeyOf(v starlark.Value) string {
	d, ok := v.(*starlark.Dict)
	if !ok {
		return ""
	}
	get := func(k string) string {
		x, found, _ := d.Get(starlark.String(k))
		if !found {
			return ""
		}
		s, _ := starlark.AsString(x)
		return s
	}
	return ActionKey(get("kind"), get("text"), get("tool"), get("args"))
}

func voteKeyBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var c starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &c); err != nil {
		return nil, err
	}
	if d, ok := c.(*starlark.Dict); ok {
		if a, found, _ := d.Get(starlark.String("action")); found {
			return starlark.String(actionKeyOf(a)), nil
		}
		return starlark.String(actionKeyOf(d)), nil
	}
	if c == starlark.None {
		return starlark.String(""), nil
	}
	return nil, fmt.Errorf("%s: want a candidate or an action dict, not %s", b.Name(), c.Type())
}

// voteBuiltin groups candidates by action key and returns the first
// candidate of the heaviest group. A group weighs its count, or, with
// byLogProb, the sum of its candidates' probabilities relative to the
// most likely one. validOnly leaves invalid candidates out (all invalid:
// the first candidate). Ties go to the group seen first, so the result
// depends only on the candidates' order.
func voteBuiltin(name string, validOnly, byLogProb bool) *starlark.Builtin {
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var list *starlark.List
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &list); err != nil {
			return nil, err
		}
		if list.Len() == 0 {
			return nil, fmt.Errorf("%s: no candidates", b.Name())
		}
		type cand struct {
			key   string
			valid bool
			lp    float64
		}
		cs := make([]cand, list.Len())
		maxLP := math.Inf(-1)
		for i := range cs {
			d, ok := list.Index(i).(*starlark.Dict)
			if !ok {
				return nil, fmt.Errorf("%s: candidate %d is %s, not a candidate dict", b.Name(), i, list.Index(i).Type())
			}
			a, _, _ := d.Get(starlark.String("action"))
			v, _, _ := d.Get(starlark.String("valid"))
			lp, _, _ := d.Get(starlark.String("logprob"))
			f, _ := starlark.AsFloat(lp)
			cs[i] = cand{key: actionKeyOf(a), valid: v == starlark.True, lp: f}
			if cs[i].valid || !validOnly {
				maxLP = math.Max(maxLP, f)
			}
		}
		weight := map[string]float64{}
		first := map[string]int{}
		var order []string
		for i, c := range cs {
			if validOnly && !c.valid {
				continue
			}
			if _, ok := first[c.key]; !ok {
				first[c.key] = i
				order = append(order, c.key)
			}
			if byLogProb {
				weight[c.key] += math.Exp(c.lp - maxLP)
			} else {
				weight[c.key]++
			}
		}
		if len(order) == 0 {
			return list.Index(0), nil
		}
		best := order[0]
		for _, k := range order[1:] {
			if weight[k] > weight[best] {
				best = k
			}
		}
		return list.Index(first[best]), nil
	})
}
