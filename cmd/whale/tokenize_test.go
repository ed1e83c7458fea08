package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

const (
	qwenTokenizer = "../../core/tokenizer/testdata/qwen3_tokenizer.json.gz"
	qwenGolden    = "../../core/tokenizer/testdata/qwen3_golden.jsonl"
)

// runWhaleIn runs the root command in-process with stdin.
func runWhaleIn(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

type goldenLine struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

func readGoldenLines(t *testing.T) []goldenLine {
	t.Helper()
	data, err := os.ReadFile(qwenGolden)
	if err != nil {
		t.Fatal(err)
	}
	var gs []goldenLine
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var g goldenLine
		if err := json.Unmarshal([]byte(l), &g); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	return gs
}

func outputLines(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func TestTokenizeEncodesAndDecodesTheGoldenStrings(t *testing.T) {
	gs := readGoldenLines(t)
	var in strings.Builder
	for _, g := range gs {
		b, _ := json.Marshal(g.Text)
		in.Write(b)
		in.WriteByte('\n')
	}
	out, err := runWhaleIn(t, in.String(), "tokenize", "--tokenizer", qwenTokenizer, "--json")
	if err != nil {
		t.Fatal(err)
	}
	lines := outputLines(t, out)
	if len(lines) != len(gs) {
		t.Fatalf("%d output lines for %d inputs", len(lines), len(gs))
	}
	for i, l := range lines {
		var ids []int32
		if err := json.Unmarshal([]byte(l), &ids); err != nil || !slices.Equal(ids, gs[i].IDs) {
			t.Fatalf("line %d: %s (err %v), want %v", i+1, l, err, gs[i].IDs)
		}
	}

	// Decoding those arrays gives the (NFC) texts back.
	out, err = runWhaleIn(t, out, "tokenize", "--tokenizer", qwenTokenizer, "--decode", "--json")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range outputLines(t, out) {
		var s string
		if err := json.Unmarshal([]byte(l), &s); err != nil || s != norm.NFC.String(gs[i].Text) {
			t.Fatalf("decoded line %d: %s (err %v), want %q", i+1, l, err, gs[i].Text)
		}
	}
}

func TestTokenizePlainLines(t *testing.T) {
	out, err := runWhaleIn(t, "Hello, world!\n\n<|im_end|>", "tokenize", "--tokenizer", qwenTokenizer)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[9707,11,1879,0]\n[]\n[151645]\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	out, err = runWhaleIn(t, "[9707,11,1879,0]\n[151644,872,198]\n", "tokenize", "--tokenizer", qwenTokenizer, "--decode")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Hello, world!\n<|im_start|>user\n\n"; out != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func TestTokenizeErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"not a JSON string", "\"ok\"\nnot json\n", "line 2", []string{"--json"}},
		{"null string", "null\n", "line 1", []string{"--json"}},
		{"not an id array", "[1,2]\n[1,\"x\"]\n", "line 2", []string{"--decode"}},
		{"id outside the vocabulary", "[1]\n[2]\n[151669]\n", "line 3: id 151669", []string{"--decode"}},
	} {
		_, err := runWhaleIn(t, c.stdin, append([]string{"tokenize", "--tokenizer", qwenTokenizer}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || isUsage(err) {
			t.Errorf("%s: error %v, want one naming %q (exit 1)", c.name, err, c.want)
		}
	}
	if _, err := runWhaleIn(t, "x\n", "tokenize"); !isUsage(err) {
		t.Errorf("missing --tokenizer: error %v, want a usage error", err)
	}
	if _, err := runWhaleIn(t, "x\n", "tokenize", "--tokenizer", t.TempDir()); err == nil || isUsage(err) {
		t.Errorf("directory without tokenizer.json: error %v, want exit 1", err)
	}
}
