package math

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/data"
	"whale/internal/longtests"
)

// small keeps default test runs fast; the full default sizes run behind
// WHALE_LONG_TESTS.
var small = data.Sizes{Train: 400, Val: 40, Audit: 20, Test: 60}

func sizes(t *testing.T) data.Sizes {
	if longtests.Enabled() {
		return data.DefaultSizes
	}
	return small
}

func TestGoldReplayEverySplit(t *testing.T) {
	d, err := NewSized(1, sizes(t))
	if err != nil {
		t.Fatal(err)
	}
	levels := map[int]int{}
	decimals := 0
	for _, sp := range data.Splits {
		tasks, err := d.Tasks(sp)
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			t.Fatalf("split %s is empty", sp)
		}
		for _, task := range tasks {
			res, _, err := data.ReplayGold(d, task)
			if err != nil || !res.Done || res.Reward != 1 {
				t.Fatalf("gold replay of %s (%q, answer %s): %+v, %v", task.ID, task.Problem, task.Answer, res, err)
			}
			levels[task.Level]++
			if strings.Contains(task.Answer, ".") {
				decimals++
			}
			steps, err := Solution(task)
			if err != nil || len(steps) != task.Level || steps[len(steps)-1].Value != task.Answer {
				t.Fatalf("task %s: solution %+v (%v) does not end in the answer %s with %d steps", task.ID, steps, err, task.Answer, task.Level)
			}
		}
	}
	for l := 1; l <= 5; l++ {
		if levels[l] == 0 {
			t.Errorf("no task of level %d", l)
		}
	}
	if decimals == 0 {
		t.Error("no decimal answers")
	}
	all := 0
	for _, n := range levels {
		all += n
	}
	if a := CalcAgreement(allTasks(t, d)); a.Rate() != 1 || a.Annotations < all {
		t.Errorf("calc agreement on generated solutions: %+v", a)
	}
}

func allTasks(t *testing.T, d data.Domain) []data.Task {
	var out []data.Task
	for _, sp := range data.Splits {
		ts, err := d.Tasks(sp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ts...)
	}
	return out
}

func splitHash(t *testing.T, d data.Domain) string {
	var b strings.Builder
	for _, sp := range data.Splits {
		ts, _ := d.Tasks(sp)
		b.WriteString(sp + ":" + data.HashTasks(ts) + "\n")
	}
	return b.String()
}

func TestSplitsDeterministicDisjoint(t *testing.T) {
	a, _ := NewSized(7, small)
	b, _ := NewSized(7, small)
	c, _ := NewSized(8, small)
	if splitHash(t, a) != splitHash(t, b) {
		t.Fatal("one seed gave two different sets of splits")
	}
	if splitHash(t, a) == splitHash(t, c) {
		t.Fatal("two seeds gave the same splits")
	}
	seen := map[string]string{}
	for _, sp := range data.Splits {
		ts, _ := a.Tasks(sp)
		for _, task := range ts {
			if prev, ok := seen[task.Problem]; ok {
				t.Fatalf("problem in both %s and %s: %q", prev, sp, task.Problem)
			}
			seen[task.Problem] = sp
		}
	}
	if len(seen) != small.Total() {
		t.Fatalf("%d distinct problems, want %d", len(seen), small.Total())
	}
}

func TestEpisodeFailures(t *testing.T) {
	d, _ := NewSized(3, data.Sizes{Train: 10, Val: 1, Audit: 1, Test: 1})
	ts, _ := d.Tasks(data.SplitTrain)
	task := ts[0]
	ep := d.NewEpisode(task)
	obs := ep.Observe()
	if obs.Fields["question"] != task.Problem || strings.Contains(obs.Text, "####") {
		t.Fatalf("observation %+v", obs)
	}
	for _, h := range []string{task.Answer, task.Hidden[HiddenSteps]} {
		if strings.Contains(obs.Text, h) && !strings.Contains(task.Problem, h) {
			t.Fatalf("observation leaks hidden data %q", h)
		}
	}
	steps := []struct {
		a    data.Action
		fail data.FailureKind
		tool string
	}{
		{data.Action{Kind: data.ActTool, Tool: "calc", Args: "6*7"}, data.FailNone, "42"},
		{data.Action{Kind: data.ActTool, Tool: "calc", Args: "1/0"}, data.FailToolError, ""},
		{data.Action{Kind: data.ActTool, Tool: "calc", Args: "2^(1/2)"}, data.FailToolError, ""},
		{data.Action{Kind: data.ActTool, Tool: "search", Args: "x"}, data.FailInvalid, ""},
		{data.Action{Kind: data.ActMove, Text: "e2e4"}, data.FailInvalid, ""},
		{data.Action{Kind: data.ActAnswer, Text: "I do not know"}, data.FailInvalid, ""},
	}
	for i, s := range steps {
		res := ep.Step(s.a)
		if res.Done || res.Reward != 0 || res.Failure != s.fail || res.ToolResult != s.tool {
			t.Fatalf("step %d %+v: got %+v", i, s.a, res)
		}
		if res.Obs.Turn != i+1 {
			t.Fatalf("step %d: turn %d", i, res.Obs.Turn)
		}
	}
	if got := ep.Observe().Fields["tool_results"].([]string); len(got) != 3 || got[0] != "calc(6*7) = 42" {
		t.Fatalf("tool results %q", got)
	}
	wrong := ep.Step(data.Action{Kind: data.ActAnswer, Text: "The answer is " + task.Answer + "1"})
	if !wrong.Done || wrong.Reward != 0 || wrong.Failure != data.FailWrong {
		t.Fatalf("wrong answer: %+v", wrong)
	}
	again := ep.Step(data.Action{Kind: data.ActAnswer, Text: task.Answer})
	if again.Reward != 0 || !again.Done {
		t.Fatalf("step after done changed the result: %+v", again)
	}
}

func TestImportGSM8K(t *testing.T) {
	d, bad, err := ImportGSM8K("testdata/gsm8k_sample.jsonl", data.ImportOptions{Seed: 1})
	if err != nil || len(bad) != 0 {
		t.Fatal(err, bad)
	}
	tasks := allTasks(t, d)
	if len(tasks) != 4 {
		t.Fatalf("%d tasks, want 4", len(tasks))
	}
	answers := map[string]bool{}
	for _, task := range tasks {
		answers[task.Answer] = true
		res, _, err := data.ReplayGold(d, task)
		if err != nil || res.Reward != 1 {
			t.Fatalf("gold replay of %s: %+v %v", task.ID, res, err)
		}
	}
	for _, a := range []string{"72", "10", "3.33", "1234"} {
		if !answers[a] {
			t.Errorf("answer %s missing from %v", a, answers)
		}
	}
	// 7 annotations; "2+2=5" disagrees, "10/3=3.33" agrees by rounding.
	if a := CalcAgreement(tasks); a.Annotations != 7 || a.Agree != 6 || a.Errors != 0 {
		t.Errorf("agreement %+v, want 6 of 7", a)
	}
}

func TestImportGSM8KBadLines(t *testing.T) {
	dir := t.TempDir()
	good := `{"question": "q1", "answer": "1+1=<<1+1=2>>2\n#### 2"}`
	cases := []struct{ line, field, reason string }{
		{`{"question": "q", "answer": "no marker"}`, "answer", "####"},
		{`{"question": "q", "answer": "#### many"}`, "answer", "not a number"},
		{`{"question": 5, "answer": "#### 5"}`, "question", "want a string"},
		{`{"answer": "#### 5"}`, "question", "missing"},
		{`{"question": "q", "answer": ""}`, "answer", "empty"},
		{`{"question": "q", "answer": "#### 5"`, "", "invalid JSON"},
		{`[1, 2]`, "", "want a JSON object"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, "f.jsonl")
		os.WriteFile(path, []byte(good+"\n"+c.line+"\n"+strings.Replace(good, "q1", "q2", 1)+"\n"), 0o644)
		_, _, err := ImportGSM8K(path, data.ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), path+":2") || !strings.Contains(err.Error(), c.reason) ||
			c.field != "" && !strings.Contains(err.Error(), "field "+c.field) {
			t.Errorf("line %s: error %v, want %s:2, field %q, %q", c.line, err, path, c.field, c.reason)
		}
		d, bad, err := ImportGSM8K(path, data.ImportOptions{SkipBad: true})
		if err != nil || len(bad) != 1 || bad[0].Line != 2 || bad[0].Field != c.field {
			t.Errorf("skip-bad on %s: %v %+v", c.line, err, bad)
			continue
		}
		if n := len(allTasks(t, d)); n != 2 {
			t.Errorf("skip-bad kept %d tasks, want 2", n)
		}
	}
}

func FuzzImportGSM8K(f *testing.F) {
	f.Add([]byte(`{"question": "q", "answer": "a <<1+1=2>>2\n#### 2"}`))
	f.Add([]byte(`{"question": "", "answer": 3}`))
	f.Add([]byte("\n\n{\"question\": \"x\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "f.jsonl")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, bad, err := ImportGSM8K(path, data.ImportOptions{SkipBad: true})
		for _, bl := range bad {
			if bl.File != path || bl.Line < 1 || bl.Reason == "" {
				t.Fatalf("bad line without location: %+v", bl)
			}
		}
		if err != nil {
			return
		}
		for _, task := range allTasks(t, d) {
			if res, _, err := data.ReplayGold(d, task); err != nil || res.Reward != 1 {
				t.Fatalf("imported task %+v does not replay: %+v %v", task, res, err)
			}
			CalcAgreement([]data.Task{task})
		}
	})
}
