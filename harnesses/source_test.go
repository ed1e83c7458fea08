package harnesses

import (
	"slices"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

func TestNormalizeAndHash(t *testing.T) {
	a := "X = 1  \r\nY = 2\t\n\n\n"
	b := "X = 1\nY = 2\n"
	if Normalize(a) != b {
		t.Fatalf("Normalize(%q) = %q, want %q", a, Normalize(a), b)
	}
	if Hash(a) != Hash(b) || len(Hash(a)) != 64 {
		t.Fatalf("hashes of whitespace variants differ or are malformed: %s %s", Hash(a), Hash(b))
	}
	if Hash(b) == Hash("X = 1\nY = 3\n") {
		t.Fatal("different sources share a hash")
	}
}

func TestSearchSpaceOfBuiltins(t *testing.T) {
	for _, d := range fakeDomains() {
		h := loadBuiltin(t, d)
		space := h.SearchSpace()
		if len(space) < 5 {
			t.Fatalf("%s: search space has %d knobs", d.name, len(space))
		}
		byName := map[string]Dimension{}
		for _, dim := range space {
			byName[dim.Knob] = dim
			if !slices.Contains(dim.Choices, dim.Current) {
				t.Fatalf("%s: %s current %s not among %v", d.name, dim.Knob, dim.Current, dim.Choices)
			}
		}
		if p := byName["parse_action"]; !p.Fragment || len(p.Choices) < 4 {
			t.Fatalf("%s: parse_action dimension %+v", d.name, p)
		}
		if m := byName["MAX_TURNS"]; m.Fragment {
			t.Fatalf("%s: MAX_TURNS should be a literal knob", d.name)
		}
		// Every choice of every knob yields a harness that still loads.
		for _, dim := range space {
			for _, c := range dim.Choices {
				src, err := Mutate(h.Source, dim.Knob, c)
				if err != nil {
					t.Fatalf("%s: mutate %s=%s: %v", d.name, dim.Knob, c, err)
				}
				if _, err := Load("m.star", src, EnvOf(d)); err != nil {
					t.Fatalf("%s: %s=%s does not load: %v", d.name, dim.Knob, c, err)
				}
			}
		}
		knobs := map[string]Knob{}
		for _, k := range h.Knobs() {
			knobs[k.Name] = k
		}
		if _, ok := knobs["MAX_TURNS"]; !ok {
			t.Fatalf("%s: Knobs lacks MAX_TURNS: %+v", d.name, h.Knobs())
		}
		if _, ok := knobs["SYSTEM_TERSE"]; ok {
			t.Fatalf("%s: a fragment is listed as a knob", d.name)
		}
	}
}

func TestMutate(t *testing.T) {
	src := "A = 1\nB = _x\n\ndef _x(t):\n    return t\n\ndef _y(t):\n    return t\n\nSEARCH_SPACE = {\"A\": [1, 2, 3], \"B\": [_x, _y]}\n"
	got, err := Mutate(src, "A", "3")
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Replace(src, "A = 1", "A = 3", 1); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	got, err = Mutate(got, "B", "_y")
	if err != nil || !strings.Contains(got, "B = _y\n") || !strings.Contains(got, "A = 3\n") {
		t.Fatalf("second mutation: %v\n%s", err, got)
	}
	if Hash(got) == Hash(src) {
		t.Fatal("mutation kept the hash")
	}
	for _, c := range []struct{ knob, choice, want string }{
		{"A", "4", "not a choice of A"},
		{"C", "1", "not a knob"},
		{"B", "_z", "not a choice"},
	} {
		if _, err := Mutate(src, c.knob, c.choice); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("Mutate(%s, %s): error %v, want %q", c.knob, c.choice, err, c.want)
		}
	}
	dims, err := SpaceOf(src)
	if err != nil || len(dims) != 2 || dims[0].Knob != "A" || dims[1].Fragment != true {
		t.Fatalf("SpaceOf: %v %+v", err, dims)
	}
}

func TestMutateKeepsUnicodeColumns(t *testing.T) {
	src := "P = \"é→\"; A = 1\nSEARCH_SPACE = {\"A\": [1, 2]}\n"
	f, err := parseSource("u.star", src)
	if err != nil {
		t.Skipf("semicolons: %v", err)
	}
	_ = f
	got, err := Mutate(src, "A", "2")
	if err != nil || !strings.HasPrefix(got, "P = \"é→\"; A = 2\n") {
		t.Fatalf("%v %q", err, got)
	}
}

func TestDiff(t *testing.T) {
	a := "A = 1\nB = 2\nC = 3\nD = 4\nE = 5\nF = 6\nG = 7\nH = 8\nI = 9\n"
	b := strings.Replace(a, "B = 2", "B = 20", 1)
	b = strings.Replace(b, "I = 9", "I = 9\nJ = 10", 1)
	d := Diff("a.star", a, "b.star", b)
	for _, want := range []string{"--- a.star " + Hash(a), "+++ b.star " + Hash(b), "-B = 2\n+B = 20\n", "+J = 10\n", "@@ -1,5 +1,5 @@"} {
		if !strings.Contains(d, want) {
			t.Fatalf("diff lacks %q:\n%s", want, d)
		}
	}
	if same := Diff("a", a, "b", a+"\n\n"); strings.Contains(same, "@@") {
		t.Fatalf("whitespace-only difference shows hunks:\n%s", same)
	}
}

func TestLintAllowsBuiltinsAndExamples(t *testing.T) {
	// One example move and small numbers are fine.
	src := minimal + "EXAMPLE = \"reply like <move>e2e4</move>\"\nYEAR = 2026\n"
	if _, err := Load("ok.star", src, EnvOf(&fakeDomain{name: "math", turns: 3})); err != nil {
		t.Fatal(err)
	}
}

func TestExtracted(t *testing.T) {
	for _, c := range []struct {
		ans, text string
		want      bool
	}{
		{"42", "so <answer>42</answer>", true},
		{"Paris", "the answer: paris.", true},
		{"e2e4", "<move>E2E4</move>", true},
		{"1,234", "it is 1234", true},
		{"43", "<answer>42</answer>", false},
		{"", "anything", false},
		{"...", "...", false},
	} {
		if got := Extracted(c.ans, c.text); got != c.want {
			t.Errorf("Extracted(%q, %q) = %v", c.ans, c.text, got)
		}
	}
}

// FuzzLoad feeds arbitrary source to the loader and validator: it must
// return a harness or a *LoadError naming a position, never panic or hang.
func FuzzLoad(f *testing.F) {
	for _, d := range []string{"math", "chess", "searchqa"} {
		src, _ := Builtin(d, "h0")
		f.Add(src)
	}
	f.Add(minimal)
	f.Add("def f(:\n")
	f.Add("X = [x for x in range(100)]\nSEARCH_SPACE = {\"X\": [1]}\n")
	f.Add("load(\"a\", \"b\")\n")
	env := EnvOf(&fakeDomain{name: "math", turns: 3})
	f.Fuzz(func(t *testing.T, src string) {
		h, err := Load("fuzz.star", src, env)
		if err != nil {
			le, ok := err.(*LoadError)
			if !ok || len(le.Issues) == 0 {
				t.Fatalf("error is not a *LoadError with issues: %T %v", err, err)
			}
			for _, is := range le.Issues {
				if is.Line < 1 || is.Rule == "" || is.Msg == "" {
					t.Fatalf("issue without position, rule or message: %+v", is)
				}
			}
			return
		}
		if h.Hash != Hash(src) {
			t.Fatal("hash of a loaded harness differs from Hash of its source")
		}
	})
}

// FuzzBuiltinParsers feeds arbitrary completions to every parser fragment
// of the built-in harnesses: each must return None or a well-formed
// action, never fail.
func FuzzBuiltinParsers(f *testing.F) {
	f.Add("<answer>42</answer>")
	f.Add("<tool>calc: 1+2</tool><answer>")
	f.Add("<move>e2e4</move> or [e7e5]")
	f.Add("\\boxed{3/4} the answer is Paris.")
	var hs []*Harness
	var parsers [][]string
	for _, d := range fakeDomains() {
		h := loadBuiltin(f, d)
		hs = append(hs, h)
		for _, dim := range h.SearchSpace() {
			if dim.Knob == "parse_action" {
				parsers = append(parsers, dim.Choices)
			}
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		for i, h := range hs {
			for _, name := range parsers[i] {
				fn := h.globals[name]
				th, stop := newThread("fuzz", CallSteps)
				v, err := starlark.Call(th, fn, starlark.Tuple{starlark.String(text)}, nil)
				stop()
				if err != nil {
					t.Fatalf("%s %s(%q): %v", h.Env.Domain, name, text, err)
				}
				if _, err := toAction("fuzz", name, v); err != nil {
					t.Fatalf("%s %s(%q): %v", h.Env.Domain, name, text, err)
				}
			}
		}
	})
}
