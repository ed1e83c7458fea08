package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runWhale runs the root command in-process and returns stdout and the error.
func runWhale(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func lastJSONLine(t *testing.T, out string, v any) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), v); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, out)
	}
}

func isUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const gsm8kWithBadLine = `{"question": "Tom has 3 apples and buys 4 more. How many?", "answer": "3+4=<<3+4=7>>7\n#### 7"}
{"question": "broken", "answer": "no final marker"}
{"question": "What is 6 times 7?", "answer": "6*7=<<6*7=42>>42\n#### 42"}
`

func TestDataCheckBadLine(t *testing.T) {
	path := writeFile(t, "gsm.jsonl", gsm8kWithBadLine)
	_, err := runWhale(t, "data", "check", "--file", path, "--format", "gsm8k", "--json")
	if err == nil {
		t.Fatal("a malformed line passed the check")
	}
	if isUsage(err) {
		t.Fatalf("a bad file is a usage error (exit 2), want exit 1: %v", err)
	}
	if !strings.Contains(err.Error(), path+":2") || !strings.Contains(err.Error(), "field answer") {
		t.Fatalf("error %q does not name %s:2 and field answer", err, path)
	}

	out, err := runWhale(t, "data", "check", "--domain", "math", "--data", path, "--format", "gsm8k", "--skip-bad", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Tasks          int     `json:"tasks"`
		GoldRewardMean float64 `json:"gold_reward_mean"`
		CalcAgreement  float64 `json:"calc_agreement"`
		BadLines       []struct {
			File  string `json:"file"`
			Line  int    `json:"line"`
			Field string `json:"field"`
		} `json:"bad_lines"`
	}
	lastJSONLine(t, out, &rep)
	if rep.Tasks != 2 || rep.GoldRewardMean != 1 || rep.CalcAgreement != 1 || len(rep.BadLines) != 1 ||
		rep.BadLines[0].Line != 2 || rep.BadLines[0].Field != "answer" || rep.BadLines[0].File != path {
		t.Fatalf("report %+v", rep)
	}
}

func TestDataCheckQABadCorpusLine(t *testing.T) {
	qs := writeFile(t, "q.jsonl", `{"question": "Who?", "answers": ["Ada"]}`+"\n")
	corpus := writeFile(t, "c.jsonl", `{"id": "1", "title": "Ada", "text": "Ada is here."}`+"\n"+`{"id": "2", "title": "B"}`+"\n")
	_, err := runWhale(t, "data", "check", "--file", qs+","+corpus, "--format", "qa")
	if err == nil || isUsage(err) || !strings.Contains(err.Error(), corpus+":2: field text") {
		t.Fatalf("error %v, want %s:2: field text", err, corpus)
	}
}

func TestDataCheckGenerated(t *testing.T) {
	for _, dom := range []string{"math", "searchqa"} {
		out, err := runWhale(t, "data", "check", "--domain", dom, "--split", "val", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var rep map[string]any
		lastJSONLine(t, out, &rep)
		if rep["tasks"].(float64) != 256 || rep["gold_reward_mean"].(float64) != 1 {
			t.Fatalf("%s: %v", dom, rep)
		}
		if _, ok := rep["calc_agreement"]; ok != (dom == "math") {
			t.Fatalf("%s: calc_agreement present = %v", dom, ok)
		}
	}
}

func TestDataUsageErrors(t *testing.T) {
	path := writeFile(t, "gsm.jsonl", gsm8kWithBadLine)
	for _, args := range [][]string{
		{"data", "check"},
		{"data", "check", "--domain", "poetry"},
		{"data", "check", "--domain", "math", "--split", "dev"},
		{"data", "check", "--file", path},
		{"data", "check", "--file", path, "--format", "xml"},
		{"data", "check", "--domain", "chess", "--file", path, "--format", "gsm8k"},
		{"data", "check", "--domain", "math", "--skip-bad"},
		{"data", "check", "--domain", "math", "--format", "gsm8k"},
		{"data", "check", "--file", path, "--data", "other", "--format", "gsm8k"},
		{"data", "sample", "--domain", "math", "--n", "0"},
		{"data", "sample", "--domain", "math", "--split", "all"},
		{"data", "generate"},
		{"data", "generate", "--domain", "math", "extra"},
		{"data", "sample", "--domain", "math", "--bogus"},
	} {
		_, err := runWhale(t, args...)
		if err == nil || !isUsage(err) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}

func TestDataSample(t *testing.T) {
	out, err := runWhale(t, "data", "sample", "--domain", "searchqa", "--split", "test", "--n", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID, Observation, Answer string
	}
	lastJSONLine(t, out, &rows)
	if len(rows) != 3 || !strings.HasPrefix(rows[0].Observation, "Question: ") || rows[0].Answer == "" {
		t.Fatalf("rows %+v", rows)
	}
	human, err := runWhale(t, "data", "sample", "--domain", "math", "--n", "2")
	if err != nil || strings.Count(human, "answer: ") != 2 {
		t.Fatalf("human output %q, %v", human, err)
	}
}

func TestDataGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out, err := runWhale(t, "data", "generate", "--domain", "searchqa", "--seed", "3", "--out", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Dir      string `json:"dir"`
		Manifest struct {
			Files []struct{ File, SHA256 string }
		} `json:"manifest"`
	}
	lastJSONLine(t, out, &res)
	if res.Dir != dir || len(res.Manifest.Files) != 4 {
		t.Fatalf("result %+v", res)
	}
	for _, f := range []string{"train.jsonl", "val.jsonl", "audit.jsonl", "test.jsonl", "corpus.jsonl", "manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// The written splits read back and replay.
	out, err = runWhale(t, "data", "check", "--file", dir, "--format", "splits", "--split", "test", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	lastJSONLine(t, out, &rep)
	if rep["domain"] != "searchqa" || rep["tasks"].(float64) != 512 || rep["gold_reward_mean"].(float64) != 1 {
		t.Fatalf("check of generated files: %v", rep)
	}
	// A failed generate writes nothing.
	none := filepath.Join(t.TempDir(), "none")
	if _, err := runWhale(t, "data", "generate", "--domain", "nope", "--out", none); err == nil {
		t.Fatal("unknown domain generated")
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Fatalf("a failed generate left %s behind", none)
	}
}
