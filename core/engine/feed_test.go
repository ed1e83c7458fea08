package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"whale/core/chat"
	"whale/core/policy"
	"whale/core/tokenizer"
	"whale/core/weights"
	"whale/data"
	"whale/harnesses"
)

// wordyOracle answers as the oracle does, each sample of a vote in its own
// words: sample j (key suffix "/vj") opens with j "ok" words, so the SAMPLES
// completions of a call are distinct token sequences with the same correct
// answer. Sample 3 answers wrong.
type wordyOracle struct{ *harnesses.Oracle }

func (p wordyOracle) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out, err := p.Oracle.Generate(ctx, reqs)
	if err != nil {
		return nil, err
	}
	for i, r := range reqs {
		j := 0
		if at := strings.LastIndex(r.Key, "/v"); at >= 0 {
			fmt.Sscanf(r.Key[at+2:], "%d", &j)
		}
		if j == 3 {
			out[i].Text = "<answer>-987654</answer>"
			continue
		}
		out[i].Text = strings.Repeat("ok ", j) + out[i].Text
	}
	return out, nil
}

// recordingOp keeps the samples each weight step hands the operator.
type recordingOp struct {
	weights.Optimizer
	got [][]weights.Sample
}

func (r *recordingOp) Step(s []weights.Sample) (weights.Stats, error) {
	r.got = append(r.got, s)
	return r.Optimizer.Step(s)
}

// voteStep runs one weight step of a 4-sample vote of h0 under the wordy
// oracle and returns the samples the operator was handed.
func voteStep(t *testing.T, chosenOnly bool) ([]weights.Sample, *Engine) {
	t.Helper()
	db := openDB(t)
	env := testEnv(t, db)
	tmpl, err := chat.NewTemplate(tokenizer.Bytes{})
	if err != nil {
		t.Fatal(err)
	}
	env.Policy = chat.Tokenize(wordyOracle{harnesses.NewOracle(env.Domain)}, tmpl)
	h0, err := harnesses.Builtin("math", "h0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinyConfig(t)
	cfg.Condition, cfg.ChosenOnly = "weight-only", chosenOnly
	if cfg.Harness, err = harnesses.Mutate(h0, "SAMPLES", "4"); err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, env, "v")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingOp{Optimizer: e.op}
	e.op = rec
	if _, err := e.weightStep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 {
		t.Fatalf("%d operator steps, want 1", len(rec.got))
	}
	return rec.got[0], e
}

// distinctCorrect counts, per task, the distinct completions trained on
// with reward at the threshold.
func distinctCorrect(samples []weights.Sample, threshold float64) map[string]int {
	seen := map[string]map[string]bool{}
	for _, s := range samples {
		if s.Reward < threshold {
			continue
		}
		for _, c := range s.Calls {
			if seen[s.Group] == nil {
				seen[s.Group] = map[string]bool{}
			}
			seen[s.Group][fmt.Sprint(c.Completion)] = true
		}
	}
	out := map[string]int{}
	for g, m := range seen {
		out[g] = len(m)
	}
	return out
}

func TestEveryVerifiedSampleOfAVoteIsTrainedOnOnce(t *testing.T) {
	samples, e := voteStep(t, false)
	cfg := e.Cfg
	got := distinctCorrect(samples, cfg.Threshold)
	if len(got) != cfg.PromptsPerStep {
		t.Fatalf("kept samples of %d tasks, want all %d: %v", len(got), cfg.PromptsPerStep, got)
	}
	// Samples 0–2 of each call are correct and distinct, sample 3 wrong:
	// three distinct correct completions per task, whichever the vote chose.
	for task, n := range got {
		if n != 3 {
			t.Errorf("task %s: %d distinct correct completions trained on, want all 3 the vote drew", task, n)
		}
	}
	// Deduplicated: the G rollouts of a task drew the same three texts, so
	// the extras add the two passed over once per task, not once per rollout.
	if want := 2 * cfg.PromptsPerStep; e.st.Ledger.TrainExtra != want {
		t.Errorf("TrainExtra = %d, want %d (2 passed-over correct texts per task, once each)", e.st.Ledger.TrainExtra, want)
	}
	for _, s := range samples {
		for _, c := range s.Calls {
			if strings.Contains(string(tokenizer.Bytes{}.Decode(c.Completion)), "-987654") {
				t.Fatalf("the wrong sample was trained on: %+v", s)
			}
		}
	}
}

func TestChosenOnlyTrainsTheChosenCompletionAlone(t *testing.T) {
	samples, e := voteStep(t, true)
	for task, n := range distinctCorrect(samples, e.Cfg.Threshold) {
		if n != 1 {
			t.Errorf("task %s: %d distinct completions under chosen_only, want 1", task, n)
		}
	}
	if e.st.Ledger.TrainExtra != 0 {
		t.Errorf("TrainExtra = %d under chosen_only, want 0", e.st.Ledger.TrainExtra)
	}
}

func TestAPassedOverAnswerIsVerifiedOnAFreshEpisode(t *testing.T) {
	db := openDB(t)
	e, err := New(tinyConfig(t), testEnv(t, db), "f")
	if err != nil {
		t.Fatal(err)
	}
	task := e.train[0]
	prompt := []int32{1, 2, 3}
	gold := data.Action{Kind: data.ActAnswer, Text: task.Answer}
	wrong := data.Action{Kind: data.ActAnswer, Text: "-987654"}
	// The vote chose a wrong answer; one passed-over sample was right.
	tr := harnesses.Trajectory{TaskID: task.ID, Reward: 0, Calls: []harnesses.Call{
		{Completion: []int32{7}, Action: &gold, NotChosen: true, Outcome: "not_chosen"},
		{Completion: []int32{8}, Action: &wrong, NotChosen: true, Outcome: "not_chosen"},
		{Prompt: prompt, Completion: []int32{9}, Action: &wrong, Outcome: "answer"},
	}}
	got := e.voteExtras(map[string]data.Task{task.ID: task}, []harnesses.Trajectory{tr}, nil)
	if len(got) != 1 || got[0].Reward < 1 || fmt.Sprint(got[0].Calls[0].Completion) != "[7]" || fmt.Sprint(got[0].Calls[0].Prompt) != "[1 2 3]" {
		t.Fatalf("extras = %+v, want the one right passed-over answer under the chosen call's prompt", got)
	}
}
