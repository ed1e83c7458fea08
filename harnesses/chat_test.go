package harnesses

import (
	"context"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"whale/core/policy"
)

// The runtime hands policies chats and never touches a token: no file of
// the package but its tests imports the tokenizer, the chat template or
// the model, so the model is known here only as a policy.Policy.
func TestRuntimeImportsNoTokenizer(t *testing.T) {
	forbidden := map[string]bool{"whale/core/tokenizer": true, "whale/core/chat": true, "whale/core/model": true}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	files, sawPolicy := 0, false
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		files++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbidden[path] {
				t.Errorf("%s imports %s: the harness runtime must reach the model through policy.Policy alone", name, path)
			}
			sawPolicy = sawPolicy || path == "whale/core/policy"
		}
	}
	if files < 5 || !sawPolicy {
		t.Fatalf("read %d files, policy imported: %v — the test is not reading the package", files, sawPolicy)
	}
}

// A policy that sees only text (a chat server that returns no token ids)
// is enough for evaluation: Run takes it as it is, in rounds and
// streamed, scores its text exactly as it scores the same text in the
// model's tokens, and records calls without tokens.
func TestTextOnlyPolicyEvaluates(t *testing.T) {
	for _, d := range fakeDomains() {
		t.Run(d.name, func(t *testing.T) {
			h := loadBuiltin(t, d)
			tasks := d.make(20)
			opts := RunOptions{Seed: 1, K: 2}
			text, err := Run(context.Background(), h, d, tasks, NewOracle(d), opts)
			if err != nil {
				t.Fatal(err)
			}
			streamed, err := Run(context.Background(), h, d, tasks, &shuffled{pol: NewOracle(d), seed: 1}, opts)
			if err != nil {
				t.Fatal(err)
			}
			toks, err := Run(context.Background(), h, d, tasks, tokens(NewOracle(d)), opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := meanReward(text); got != 1 || !reflect.DeepEqual(streamed, text) {
				t.Fatalf("text-only oracle: mean reward %v (want 1), streamed equal to rounds: %v", got, reflect.DeepEqual(streamed, text))
			}
			for i, tr := range text {
				want := toks[i]
				if tr.Reward != want.Reward || len(tr.Calls) != len(want.Calls) || !reflect.DeepEqual(tr.Messages, want.Messages) {
					t.Fatalf("%s#%d: text-only and tokenized runs differ", tr.TaskID, tr.Sample)
				}
				for j, c := range tr.Calls {
					if c.Prompt != nil || c.Completion != nil || c.LogProbs != nil || c.Text != want.Calls[j].Text || c.Outcome != want.Calls[j].Outcome {
						t.Fatalf("%s#%d call %d: %+v; want no tokens and the tokenized run's text and outcome", tr.TaskID, tr.Sample, j, c)
					}
				}
			}
		})
	}
}

// A chat whose markup alone is longer than CONTEXT_TOKENS (here: a
// compact_history that keeps forty system lines ahead of the task) cannot
// be fitted by any cut: the rollout ends as the harness's error naming
// CONTEXT_TOKENS, with no call recorded since nothing was generated, in
// rounds and streamed alike; the run itself goes on.
func TestChatOverContextTokensIsAHarnessError(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := strings.Replace(minimal, "CONTEXT_TOKENS = 1024", "CONTEXT_TOKENS = 128", 1) + `
def compact_history(history, state):
    return [{"role": "system", "content": "rule"} for _ in range(40)] + history
`
	h, err := Load("tight.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	tasks := d.make(3)
	for _, c := range []struct {
		name string
		pol  policy.Policy
	}{{"rounds", tokens(NewOracle(d))}, {"streamed", &shuffled{pol: tokens(NewOracle(d))}}} {
		ts, err := Run(context.Background(), h, d, tasks, c.pol, RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, tr := range ts {
			if tr.Failure != FailHarness || !strings.Contains(tr.Error, "CONTEXT_TOKENS=128") || !strings.Contains(tr.Error, "cannot hold") || len(tr.Calls) != 0 {
				t.Fatalf("%s: failure %q error %q after %d calls", c.name, tr.Failure, tr.Error, len(tr.Calls))
			}
		}
	}
}
