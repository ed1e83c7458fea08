package harnesses

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"whale/data"
)

// minimal is a valid harness for the fake math domain; cases replace
// parts of it. "# HERE" marks the line an error must name.
const minimal = `SYSTEM_PROMPT = "Answer as <answer>N</answer>."
USER_PROMPT = "{observation}"
FORMAT_RETRY_BUDGET = 1
INVALID_RETRY_BUDGET = 1
MAX_TURNS = 3
TOOLS = ["calc"]
CONTEXT_TOKENS = 1024

def format_observation(obs, state):
    return obs["text"]

def parse_action(text):
    m = re.search(r"<answer>(.*?)</answer>", text)
    if m == None:
        return None
    return {"kind": "answer", "text": m[1]}

def is_valid_action(obs, action):
    return True
`

func hereLine(src string) int {
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "# HERE") {
			return i + 1
		}
	}
	return 0
}

// guard fails the test if f does not return within 10 s: it catches
// hangs, it is not a speed check.
func guard(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("hung for %v", hangGuard)
	}
}

func TestHostileAtLoad(t *testing.T) {
	env := EnvOf(&fakeDomain{name: "math", turns: 3})
	cases := []struct {
		name, src, want string
	}{
		{"syntax error", minimal + "def broken(:  # HERE\n    pass\n", "syntax"},
		{"endless loop at load", minimal + "def _spin():\n    n = 0\n    while True:\n        n = n + 1  # HERE\nX = _spin()\n", "too many steps"},
		{"long loop at load", minimal + "def _count():\n    n = 0\n    for i in range(1000 * 1000 * 1000):\n        n = i  # HERE\n    return n\nN = _count()\n", "too many steps"},
		{"recursion at load", minimal + "def f(n):\n    return f(n + 1)  # HERE\nX = f(0)\n", "recursive"},
		{"giant string", minimal + `X = "x" * (1000 * 1000 * 100)  # HERE` + "\n", "over the sandbox limit"},
		{"doubling string", minimal + "def _grow():\n    s = \"ab\"\n    for i in range(40):\n        s = s + s  # HERE\n    return s\nS = _grow()\n", "over the sandbox limit"},
		{"doubling list +=", minimal + "def _grow():\n    l = [1]\n    for i in range(40):\n        l += l  # HERE\n_grow()\n", "over the sandbox limit"},
		{"giant join", minimal + `L = ["x" * 100000] * 60000` + "\n" + `S = "".join(L)  # HERE` + "\n", "over the sandbox limit"},
		{"giant replace", minimal + `S = ("y" * 1000 * 1000).replace("", "zzzzzzzz")  # HERE` + "\n", "over the sandbox limit"},
		{"builtin over huge range", minimal + "X = max(range(1000 * 1000 * 1000))  # HERE\n", "sandbox limit"},
		{"list of huge range", minimal + "X = list(range(1000 * 1000 * 1000))  # HERE\n", "sandbox limit"},
		{"huge int", minimal + "def _square():\n    x = 7\n    for i in range(20):\n        x = x * x  # HERE\n    return x\nX = _square()\n", "over the sandbox limit"},
		{"scans of a big string", minimal + "def _scan():\n    s = \"ab\" * 100000\n    n = 0\n    for i in range(1000 * 1000):\n        n += len(s.upper())  # HERE\n    return n\nX = _scan()\n", "too many steps"},
		{"compares of big strings", minimal + "def _cmp():\n    s = \"ab\" * 100000\n    t = \"ab\" * 100000\n    n = 0\n    for i in range(1000 * 1000):\n        if s == t:  # HERE\n            n += 1\n    return n\nX = _cmp()\n", "too many steps"},
		{"slices of a big string", minimal + "def _slice():\n    s = \"ab\" * 100000\n    n = 0\n    for i in range(1000 * 1000):\n        n += len(s[1:])  # HERE\n    return n\nX = _slice()\n", "too many steps"},
		{"growing shifts", minimal + "def _shift():\n    x = 1\n    for i in range(1000):\n        x = x << 500  # HERE\n    return x\nX = _shift()\n", "over the sandbox limit"},
		{"int of long digits", minimal + "X = int(\"9\" * 100000)  # HERE\n", "too long for a number"},
		{"missing function", strings.Replace(minimal, "def parse_action(text):", "def other(text):", 1), "missing function parse_action(text)"},
		{"mistyped name", strings.Replace(minimal, "def parse_action(text):", "def parse_actoin(text):", 1), "did you mean parse_actoin"},
		{"mistyped constant", strings.Replace(minimal, "MAX_TURNS = 3", "MAX_TURN = 3", 1), "did you mean MAX_TURN"},
		{"wrong type", strings.Replace(minimal, "MAX_TURNS = 3", "MAX_TURNS = \"3\"  # HERE", 1), "MAX_TURNS must be an int"},
		{"budget 10^9", strings.Replace(minimal, "FORMAT_RETRY_BUDGET = 1", "FORMAT_RETRY_BUDGET = 1000 * 1000 * 1000  # HERE", 1), "allowed 0..10"},
		{"turns over twice default", strings.Replace(minimal, "MAX_TURNS = 3", "MAX_TURNS = 7  # HERE", 1), "allowed 1..6"},
		{"context too large", strings.Replace(minimal, "CONTEXT_TOKENS = 1024", "CONTEXT_TOKENS = 999999  # HERE", 1), "allowed 128..32768"},
		{"tool not offered", strings.Replace(minimal, `TOOLS = ["calc"]`, `TOOLS = ["calc", "shell"]  # HERE`, 1), `tool "shell" is not offered`},
		{"user prompt without slot", strings.Replace(minimal, `USER_PROMPT = "{observation}"`, `USER_PROMPT = "Solve it."  # HERE`, 1), "{observation}"},
		{"wrong arity", strings.Replace(minimal, "def is_valid_action(obs, action):", "def is_valid_action(action):  # HERE", 1), "must take 2 parameters"},
		{"function is a string", strings.Replace(minimal, "def format_observation(obs, state):\n    return obs[\"text\"]", "format_observation = \"text\"  # HERE", 1), "must be a function"},
		{"load", "load(\"other.star\", \"x\")  # HERE\n" + minimal, "load is not allowed"},
		{"open", minimal + "X = open(\"/etc/passwd\")  # HERE\n", "undefined: open"},
		{"reserved name", minimal + "_whale_add = 1  # HERE\n", "reserved"},
		{"fen literal", minimal + `EXAMPLE = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"  # HERE` + "\n", "lint/fen"},
		{"uci line", minimal + `LINE = "e2e4 e7e5 g1f3"  # HERE` + "\n", "lint/uci-sequence"},
		{"long digits", minimal + `ANSWERS = {"q17": "12345678"}  # HERE` + "\n", "lint/long-digits"},
		{"search space not literal", minimal + "SEARCH_SPACE = dict(MAX_TURNS = [1, 2])  # HERE\n", "dict literal"},
		{"search space choice missing", strings.Replace(minimal, "MAX_TURNS = 3", "MAX_TURNS = 3  # HERE", 1) + "SEARCH_SPACE = {\"MAX_TURNS\": [2, 4]}\n", "not one of its SEARCH_SPACE choices"},
		{"empty source", "", "missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			guard(t, func() { _, err = Load("test.star", c.src, env) })
			if err == nil {
				t.Fatal("loaded")
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %T is not a *LoadError: %v", err, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error lacks %q:\n%v", c.want, err)
			}
			if line := hereLine(c.src); line > 0 && !strings.Contains(err.Error(), fmt.Sprintf("test.star:%d:", line)) {
				t.Fatalf("error does not name line %d:\n%v", line, err)
			}
			for _, is := range le.Issues {
				if is.File != "test.star" || is.Line < 1 || is.Rule == "" {
					t.Fatalf("issue lacks file, line or rule: %+v", is)
				}
			}
		})
	}
}

func TestHostileInCalls(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	parse := "def parse_action(text):"
	cases := []struct {
		name, src, want string
	}{
		{"endless loop", strings.Replace(minimal, parse, parse+"\n    n = 0\n    while True:\n        n += 1  # HERE", 1), "too many steps"},
		{"recursion", strings.Replace(minimal, parse, "def _deep(n):\n    return _deep(n + 1)  # HERE\n\n"+parse+"\n    _deep(0)", 1), "recursive"},
		{"giant string", strings.Replace(minimal, parse, parse+"\n    s = text\n    for i in range(64):\n        s += s  # HERE", 1), "over the sandbox limit"},
		{"state bloat", strings.Replace(minimal, "def format_observation(obs, state):", "def format_observation(obs, state):\n    state[\"junk\"] = [\"x\" * 1000 * 200] * 12", 1), "episode state"},
		{"wrong return type", strings.Replace(minimal, "def is_valid_action(obs, action):\n    return True", "def is_valid_action(obs, action):  # HERE\n    return \"yes\"", 1), "must return True or False"},
		{"bad action kind", strings.Replace(minimal, `{"kind": "answer", "text": m[1]}`, `{"kind": "solve", "text": m[1]}`, 1), `kind "solve"`},
		{"runtime error", strings.Replace(minimal, "    return obs[\"text\"]", "    return obs[\"nope\"]  # HERE", 1), "format_observation"},
		{"harness answers", strings.Replace(minimal, "def is_valid_action", "def next_step(state):\n    return {\"kind\": \"tool\", \"tool\": \"calc\", \"args\": \"1+1\"} if False else {\"kind\": \"answer\", \"text\": \"13\"}\n\ndef is_valid_action", 1), "only tool calls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := Load("test.star", c.src, EnvOf(d))
			if err != nil {
				t.Fatalf("should load: %v", err)
			}
			task := d.make(2)[1]
			pol := &Scripted{Default: func(string) Reply { return Reply{Text: "<answer>13</answer>"} }}
			var ts []Trajectory
			guard(t, func() { ts, err = Run(context.Background(), h, d, []data.Task{task}, tokens(pol), RunOptions{}) })
			if err != nil {
				t.Fatal(err)
			}
			tr := ts[0]
			if tr.Failure != FailHarness || !strings.Contains(tr.Error, c.want) {
				t.Fatalf("failure %q error %q, want harness error with %q", tr.Failure, tr.Error, c.want)
			}
			if line := hereLine(c.src); line > 0 && !strings.Contains(tr.Error, fmt.Sprintf("test.star:%d:", line)) {
				t.Fatalf("error does not name line %d: %s", line, tr.Error)
			}
		})
	}
}

func TestSandboxModules(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := minimal + `
R1 = re.match(r"(\d+)-(\d+)", "12-34 x")
R2 = re.findall(r"(\w)(\d)", "a1 b2 c3")
R3 = re.sub(r"(\d+)", "<$1>", "a1b22")
R4 = re.split(r"\s*,\s*", "a , b,c")
R5 = json.decode(json.encode({"a": [1, 2.5, "x", None, True]}))
R6 = math.floor(2.7) + math.ceil(0.2)
R7 = re.search("z", "abc")
L = [1, 2]
def _extend(l):
    l2 = l
    l2 += [3]
_extend(L)
S = "%s-%d" % ("a", 3)
F = "{}+{}".format(1, 2)
J = ", ".join(["a", "b"])
`
	h, err := Load("test.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"R1": `["12-34", "12", "34"]`, "R2": `[("a", "1"), ("b", "2"), ("c", "3")]`, "R3": `"a<1>b<22>"`,
		"R4": `["a", "b", "c"]`, "R5": `{"a": [1, 2.5, "x", None, True]}`, "R6": "3", "R7": "None",
		"L": "[1, 2, 3]", "S": `"a-3"`, "F": `"1+2"`, "J": `"a, b"`,
	}
	for name, w := range want {
		if got := h.globals[name].String(); got != w {
			t.Errorf("%s = %s, want %s", name, got, w)
		}
	}
}
