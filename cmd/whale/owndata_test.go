package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// ownGSM8K is a small GSM8K-style file: twenty problems with calculator
// annotations, dealt into splits by the import.
func ownGSM8K(t *testing.T) string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, `{"question": "Ann has %d pens and buys %d more. How many pens does she have?", "answer": "%d+%d=<<%d+%d=%d>>%d\n#### %d"}`+"\n",
			i, i+2, i, i+2, i, i+2, 2*i+2, 2*i+2, 2*i+2)
	}
	return writeFile(t, "own.jsonl", b.String())
}

// `whale harness run` and `whale eval` run a person's own tasks (--data
// FILE --format F) as `whale run` does: the oracle scores 1.0 through h0 on
// every imported task of the split, and --data without --format is misuse.
func TestOwnDataInHarnessRunAndEval(t *testing.T) {
	path := ownGSM8K(t)
	for _, args := range [][]string{
		{"harness", "run", "h0", "--domain", "math", "--data", path, "--format", "gsm8k", "--split", "train", "--policy", "oracle", "--json"},
		{"eval", "--domain", "math", "--harness", "h0", "--data", path, "--format", "gsm8k", "--split", "train", "--policy", "oracle", "--json"},
	} {
		out, err := runWhale(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args[:2], err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var rep map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
			t.Fatalf("%v: %v in %q", args[:2], err, out)
		}
		score, tasks := rep["mean_reward"], rep["tasks"]
		if args[0] == "eval" {
			score = rep["mean_at_k"]
		}
		if score != 1.0 || tasks == nil || tasks.(float64) < 1 || tasks.(float64) >= 20 {
			t.Fatalf("%v on own data: score %v on %v tasks, want 1.0 on the train split's share of 20", args[:2], score, tasks)
		}
	}
	for _, args := range [][]string{
		{"harness", "run", "h0", "--domain", "math", "--data", path, "--policy", "oracle"},
		{"eval", "--domain", "math", "--harness", "h0", "--format", "gsm8k", "--policy", "oracle"},
	} {
		if _, err := runWhale(t, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
