package harnesses

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strings"
	"sync"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// The three modules a harness may use. They are written here, small and
// bounded, rather than taken from go.starlark.net/lib, so that every result
// size is capped and every unit of work is charged to the thread's steps.

const maxPattern = 1000

// reCache holds compiled patterns; harnesses use a handful of literal
// patterns, so a bounded map shared by all harnesses is enough.
var reCache = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

func compileRe(fn, pat string) (*regexp.Regexp, error) {
	if len(pat) > maxPattern {
		return nil, fmt.Errorf("re.%s: pattern is %d bytes, over the limit of %d", fn, len(pat), maxPattern)
	}
	reCache.Lock()
	defer reCache.Unlock()
	if re, ok := reCache.m[pat]; ok {
		return re, nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("re.%s: bad pattern (Go RE2 syntax): %w", fn, err)
	}
	if len(reCache.m) >= 4096 {
		clear(reCache.m)
	}
	reCache.m[pat] = re
	return re, nil
}

var reModule = &starlarkstruct.Module{Name: "re", Members: starlark.StringDict{
	"match":   starlark.NewBuiltin("re.match", reMatch),
	"search":  starlark.NewBuiltin("re.search", reSearch),
	"findall": starlark.NewBuiltin("re.findall", reFindall),
	"sub":     starlark.NewBuiltin("re.sub", reSub),
	"split":   starlark.NewBuiltin("re.split", reSplit),
	"escape":  starlark.NewBuiltin("re.escape", reEscape),
}}

// groupsValue turns submatch indices into [whole, group1, ...] with None
// for groups that did not take part.
func groupsValue(s string, loc []int) starlark.Value {
	out := make([]starlark.Value, len(loc)/2)
	for i := range out {
		if loc[2*i] < 0 {
			out[i] = starlark.None
		} else {
			out[i] = starlark.String(s[loc[2*i]:loc[2*i+1]])
		}
	}
	return starlark.NewList(out)
}

func reFind(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple, anchored bool) (starlark.Value, error) {
	var pat, s string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pat, "string", &s); err != nil {
		return nil, err
	}
	if anchored {
		pat = `^(?:` + pat + `)`
	}
	re, err := compileRe(b.Name()[3:], pat)
	if err != nil {
		return nil, err
	}
	charge(thread, len(s))
	loc := re.FindStringSubmatchIndex(s)
	if loc == nil {
		return starlark.None, nil
	}
	return groupsValue(s, loc), nil
}

// reMatch: re.match(pattern, string) -> [whole, groups...] or None, anchored
// at the start of string.
func reMatch(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return reFind(thread, b, args, kwargs, true)
}

// reSearch: re.search(pattern, string) -> [whole, groups...] or None.
func reSearch(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	return reFind(thread, b, args, kwargs, false)
}

// reFindall follows Python: no group → the matches; one group → that
// group; several → tuples of groups ("" for a group that did not match).
func reFindall(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pat, s string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pat, "string", &s); err != nil {
		return nil, err
	}
	re, err := compileRe("findall", pat)
	if err != nil {
		return nil, err
	}
	charge(thread, len(s))
	locs := re.FindAllStringSubmatchIndex(s, MaxElems+1)
	if len(locs) > MaxElems {
		return nil, fmt.Errorf("re.findall: more than %d matches, the sandbox limit", MaxElems)
	}
	out := make([]starlark.Value, len(locs))
	ng := re.NumSubexp()
	for i, loc := range locs {
		grp := func(g int) starlark.String {
			if loc[2*g] < 0 {
				return ""
			}
			return starlark.String(s[loc[2*g]:loc[2*g+1]])
		}
		switch ng {
		case 0:
			out[i] = grp(0)
		case 1:
			out[i] = grp(1)
		default:
			t := make(starlark.Tuple, ng)
			for g := 1; g <= ng; g++ {
				t[g-1] = grp(g)
			}
			out[i] = t
		}
	}
	charge(thread, len(out)*16)
	return starlark.NewList(out), nil
}

// reSub: re.sub(pattern, repl, string, count=0). repl uses Go's expansion
// syntax: $1 or ${name} for groups, $$ for a dollar.
func reSub(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pat, repl, s string
	count := 0
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pat, "repl", &repl, "string", &s, "count?", &count); err != nil {
		return nil, err
	}
	re, err := compileRe("sub", pat)
	if err != nil {
		return nil, err
	}
	limit := -1
	if count > 0 {
		limit = count
	}
	charge(thread, len(s))
	locs := re.FindAllStringSubmatchIndex(s, limit)
	var out []byte
	last := 0
	for _, loc := range locs {
		out = append(out, s[last:loc[0]]...)
		out = re.ExpandString(out, repl, s, loc)
		last = loc[1]
		if len(out) > MaxString {
			return nil, sizeErr("re.sub result", len(out), MaxString)
		}
	}
	out = append(out, s[last:]...)
	if len(out) > MaxString {
		return nil, sizeErr("re.sub result", len(out), MaxString)
	}
	charge(thread, len(out))
	return starlark.String(out), nil
}

// reSplit: re.split(pattern, string, maxsplit=0).
func reSplit(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var pat, s string
	maxsplit := 0
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "pattern", &pat, "string", &s, "maxsplit?", &maxsplit); err != nil {
		return nil, err
	}
	re, err := compileRe("split", pat)
	if err != nil {
		return nil, err
	}
	n := -1
	if maxsplit > 0 {
		n = maxsplit + 1
	}
	charge(thread, len(s))
	parts := re.Split(s, n)
	if len(parts) > MaxElems {
		return nil, fmt.Errorf("re.split: more than %d parts, the sandbox limit", MaxElems)
	}
	out := make([]starlark.Value, len(parts))
	for i, p := range parts {
		out[i] = starlark.String(p)
	}
	return starlark.NewList(out), nil
}

func reEscape(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "string", &s); err != nil {
		return nil, err
	}
	charge(thread, len(s))
	return starlark.String(regexp.QuoteMeta(s)), nil
}

var jsonModule = &starlarkstruct.Module{Name: "json", Members: starlark.StringDict{
	"encode": starlark.NewBuiltin("json.encode", jsonEncode),
	"decode": starlark.NewBuiltin("json.decode", jsonDecode),
}}

func jsonEncode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &v); err != nil {
		return nil, err
	}
	if n := sizeOf(v, MaxString); n > MaxString {
		return nil, sizeErr("json.encode input", n, MaxString)
	}
	g, err := toGo(v, 0)
	if err != nil {
		return nil, fmt.Errorf("json.encode: %w", err)
	}
	out, err := json.Marshal(g)
	if err != nil {
		return nil, fmt.Errorf("json.encode: %w", err)
	}
	if len(out) > MaxString {
		return nil, sizeErr("json.encode result", len(out), MaxString)
	}
	charge(thread, len(out))
	return starlark.String(out), nil
}

func jsonDecode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &s); err != nil {
		return nil, err
	}
	charge(thread, len(s))
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("json.decode: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("json.decode: text after the JSON value")
	}
	return fromGo(g)
}

// toGo converts a Starlark value to plain Go values for encoding/json;
// dict keys must be strings.
func toGo(v starlark.Value, depth int) (any, error) {
	if depth > 64 {
		return nil, fmt.Errorf("value nested deeper than 64")
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		if i, ok := v.Int64(); ok {
			return i, nil
		}
		return json.Number(v.String()), nil
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("cannot encode %v", f)
		}
		return f, nil
	case starlark.String:
		return string(v), nil
	case *starlark.List, starlark.Tuple:
		seq := v.(starlark.Indexable)
		out := make([]any, seq.Len())
		for i := range out {
			x, err := toGo(seq.Index(i), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, v.Len())
		for _, kv := range v.Items() {
			k, ok := kv[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is not a string", kv[0].Type())
			}
			x, err := toGo(kv[1], depth+1)
			if err != nil {
				return nil, err
			}
			out[string(k)] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot convert %s", v.Type())
}

// fromGo converts decoded JSON or observation fields to Starlark values.
func fromGo(g any) (starlark.Value, error) {
	switch g := g.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(g), nil
	case string:
		return starlark.String(g), nil
	case int:
		return starlark.MakeInt(g), nil
	case int64:
		return starlark.MakeInt64(g), nil
	case float64:
		return starlark.Float(g), nil
	case json.Number:
		if i, ok := new(big.Int).SetString(string(g), 10); ok {
			if i.CmpAbs(bigIntLimit) > 0 {
				return nil, fmt.Errorf("json.decode: integer %s is too large", g)
			}
			return starlark.MakeBigInt(i), nil
		}
		f, err := g.Float64()
		if err != nil {
			return nil, fmt.Errorf("json.decode: number %s: %w", g, err)
		}
		return starlark.Float(f), nil
	case []string:
		out := make([]starlark.Value, len(g))
		for i, s := range g {
			out[i] = starlark.String(s)
		}
		return starlark.NewList(out), nil
	case []any:
		out := make([]starlark.Value, len(g))
		for i, x := range g {
			v, err := fromGo(x)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return starlark.NewList(out), nil
	case map[string]any:
		keys := make([]string, 0, len(g))
		for k := range g {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic iteration order in Starlark
		d := starlark.NewDict(len(g))
		for _, k := range keys {
			v, err := fromGo(g[k])
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), v); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("cannot convert Go value of type %T", g)
}

var mathModule = &starlarkstruct.Module{Name: "math", Members: starlark.StringDict{
	"pi":    starlark.Float(math.Pi),
	"e":     starlark.Float(math.E),
	"inf":   starlark.Float(math.Inf(1)),
	"floor": mathInt("floor", math.Floor),
	"ceil":  mathInt("ceil", math.Ceil),
	"round": mathInt("round", math.Round),
	"sqrt":  mathFloat("sqrt", math.Sqrt),
	"exp":   mathFloat("exp", math.Exp),
	"log":   mathFloat("log", math.Log),
	"fabs":  mathFloat("fabs", math.Abs),
	"isnan": starlark.NewBuiltin("math.isnan", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Float
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		return starlark.Bool(math.IsNaN(float64(x))), nil
	}),
	"pow": starlark.NewBuiltin("math.pow", func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x, y starlark.Float
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &x, &y); err != nil {
			return nil, err
		}
		return starlark.Float(math.Pow(float64(x), float64(y))), nil
	}),
}}

func mathFloat(name string, f func(float64) float64) *starlark.Builtin {
	return starlark.NewBuiltin("math."+name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Float
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		return starlark.Float(f(float64(x))), nil
	})
}

// mathInt returns an int, as Python's floor, ceil and round do.
func mathInt(name string, f func(float64) float64) *starlark.Builtin {
	return starlark.NewBuiltin("math."+name, func(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var x starlark.Float
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &x); err != nil {
			return nil, err
		}
		r := f(float64(x))
		if math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("%s: cannot convert %v to int", b.Name(), r)
		}
		return starlark.NumberToInt(starlark.Float(r))
	})
}
