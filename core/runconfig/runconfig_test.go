package runconfig

import (
	"reflect"
	"strings"
	"testing"
)

const sample = `# a run
domain = "math"
E = 0.25
I = 2
harness = """
SYSTEM_PROMPT = "x"
budget = 3
"""
sample-bf16 = true
grid-knobs = ["SAMPLES", "RETRIES"]

[engine]
val_tasks = 8
temperature = 0.7
`

func TestParseKeepsEachKeyWithItsLine(t *testing.T) {
	f, err := Parse("run.toml", []byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range f.Entries {
		got = append(got, e.Table+"/"+e.Key+"@"+string(rune('0'+e.Line/10))+string(rune('0'+e.Line%10)))
	}
	// harness's source holds a line that looks like a key (budget = 3):
	// it is not one.
	want := []string{"/domain@02", "/E@03", "/I@04", "/harness@05", "/sample-bf16@09", "/grid-knobs@10", "engine/val_tasks@13", "engine/temperature@14"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries %q, want %q", got, want)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"domain = \"math\"\nE = = 2\n", "run.toml:2:"},
		{"domain = \"math\"\n\n[other]\nx = 1\n", "run.toml:3: table [other]"},
		{"[engine]\n[engine.deeper]\nx = 1\n", "run.toml:2: [engine] deeper"},
		{"a = 1\n[[runs]]\nx = 1\n", "run.toml:2: [[runs]]"},
	} {
		_, err := Parse("run.toml", []byte(c.src))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

func TestFlagValueRefusesOtherTypes(t *testing.T) {
	for _, c := range []struct {
		v    any
		kind string
		want string
		bad  bool
	}{
		{int64(64), "int", "64", false},
		{"64", "int", "", true},
		{1.5, "int", "", true},
		{int64(2), "float64", "2", false},
		{3e-4, "float64", "0.0003", false},
		{true, "bool", "true", false},
		{"yes", "bool", "", true},
		{"30s", "duration", "30s", false},
		{[]any{"a", "b"}, "string", "a,b", false},
		{[]any{"a", int64(1)}, "string", "", true},
		{int64(1), "string", "", true},
	} {
		got, err := FlagValue(c.v, c.kind)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("FlagValue(%#v, %s) = %q, %v; want %q (error: %v)", c.v, c.kind, got, err, c.want, c.bad)
		}
	}
}

// TestEncodeReadsBack writes pairs, among them a multi-line source with
// quotes, and parses them back to the same values.
func TestEncodeReadsBack(t *testing.T) {
	src := "SYSTEM_PROMPT = \"\"\"say \"hi\"\"\"\"\nx = 'it''s'\n"
	b, err := Encode("made by a test\nsecond line", []Pair{{"domain", "math"}, {"lr", 3e-4}, {"seed", int64(7)}, {"harness", src}, {"sample-bf16", false}},
		[]Pair{{"temperature", float64(float32(0.7))}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse("x.toml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got := map[string]any{}
	for _, e := range f.Entries {
		got[e.Table+"/"+e.Key] = e.Value
	}
	want := map[string]any{"/domain": "math", "/lr": 3e-4, "/seed": int64(7), "/harness": src, "/sample-bf16": false, "engine/temperature": float64(float32(0.7))}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %v, want %v\n%s", got, want, b)
	}
	if !strings.HasPrefix(string(b), "# made by a test\n# second line\n") {
		t.Errorf("comment not at the top:\n%s", b)
	}
}
