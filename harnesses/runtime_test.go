package harnesses

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"whale/data"
)

func loadBuiltin(t testing.TB, d data.Domain) *Harness {
	t.Helper()
	h, err := LoadBuiltin(d, "h0")
	if err != nil {
		t.Fatalf("load h0 of %s: %v", d.Name(), err)
	}
	return h
}

func meanReward(ts []Trajectory) float64 {
	s := 0.0
	for _, t := range ts {
		s += t.Reward
	}
	return s / float64(len(ts))
}

func failures(ts []Trajectory) map[data.FailureKind]int {
	m := map[data.FailureKind]int{}
	for _, t := range ts {
		m[t.Failure]++
	}
	return m
}

func TestOracleScoresOneOnFakeDomains(t *testing.T) {
	for _, d := range fakeDomains() {
		t.Run(d.name, func(t *testing.T) {
			h := loadBuiltin(t, d)
			tasks, _ := d.Tasks(data.SplitVal)
			ts, err := Run(context.Background(), h, d, tasks, tokens(NewOracle(d)), RunOptions{Seed: 1, BatchSize: 64})
			if err != nil {
				t.Fatal(err)
			}
			if got := meanReward(ts); got != 1 {
				t.Fatalf("oracle mean reward %v, want 1; failures %v; first error %q", got, failures(ts), ts[0].Error)
			}
		})
	}
}

func TestRandomScoresNearZeroOnFakeDomains(t *testing.T) {
	for _, d := range fakeDomains() {
		t.Run(d.name, func(t *testing.T) {
			h := loadBuiltin(t, d)
			tasks, _ := d.Tasks(data.SplitVal)
			ts, err := Run(context.Background(), h, d, tasks, tokens(NewRandom()), RunOptions{Seed: 7, MaxNewTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			if got := meanReward(ts); got > 0.02 {
				t.Fatalf("random mean reward %v, want near 0", got)
			}
			for _, tr := range ts {
				if tr.Failure == FailHarness {
					t.Fatalf("h0 failed on random text: %s", tr.Error)
				}
			}
			// Same seed, same trajectories.
			again, err := Run(context.Background(), h, d, tasks, tokens(NewRandom()), RunOptions{Seed: 7, MaxNewTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ts, again) {
				t.Fatal("two runs with the same seed differ")
			}
		})
	}
}

// runScripted runs one task of d through src with scripted replies.
func runScripted(t *testing.T, d *fakeDomain, src string, replies []Reply) (Trajectory, *Scripted) {
	t.Helper()
	h, err := Load("test.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	task := d.make(3)[1]
	pol := &Scripted{Replies: map[string][]Reply{task.ID + "#0": replies}}
	ts, err := Run(context.Background(), h, d, []data.Task{task}, tokens(pol), RunOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(ts[0]); err != nil {
		t.Fatalf("trajectory is not JSON-serialisable: %v", err)
	}
	return ts[0], pol
}

func builtinSrc(t *testing.T, domain string) string {
	src, err := Builtin(domain, "h0")
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func TestScriptedFormatRetryThenValid(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	tr, pol := runScripted(t, d, builtinSrc(t, "math"), []Reply{{Text: "I think it is about ten"}, {Text: "<answer>13</answer>"}})
	if tr.Reward != 1 || tr.Failure != data.FailNone {
		t.Fatalf("reward %v failure %q error %q", tr.Reward, tr.Failure, tr.Error)
	}
	if tr.FormatRetries != 1 || len(tr.Calls) != 2 || tr.Calls[0].Outcome != "format_retry" || tr.Calls[1].Outcome != "answer" {
		t.Fatalf("want one format retry then an answer; got retries %d, calls %+v", tr.FormatRetries, outcomes(tr))
	}
	// The retry message is in the second prompt, after the bad reply.
	second := bytesTok.Decode(pol.Requests[1].Prompt)
	if !strings.Contains(second, "I think it is about ten") || !strings.Contains(second, "Your reply had no answer") {
		t.Fatalf("second prompt lacks the failed reply or the retry message:\n%s", second)
	}
	if pol.Requests[0].Key != "math-1#0/0" || pol.Requests[1].Key != "math-1#0/1" {
		t.Fatalf("request keys %q %q", pol.Requests[0].Key, pol.Requests[1].Key)
	}
}

func outcomes(tr Trajectory) []string {
	var out []string
	for _, c := range tr.Calls {
		out = append(out, c.Outcome)
	}
	return out
}

func TestScriptedFormatBudgetExhausted(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	tr, _ := runScripted(t, d, builtinSrc(t, "math"), []Reply{{Text: "no"}, {Text: "still no"}})
	if tr.Failure != data.FailFormat || tr.FormatRetries != 1 || len(tr.Calls) != 2 {
		t.Fatalf("failure %q retries %d calls %d", tr.Failure, tr.FormatRetries, len(tr.Calls))
	}
}

func TestScriptedTruncated(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	tr, _ := runScripted(t, d, builtinSrc(t, "math"), []Reply{{Text: "Let me think step by", Length: true}, {Text: "<answer>1", Length: true}})
	if tr.Failure != data.FailTruncated {
		t.Fatalf("failure %q, want truncated; outcomes %v", tr.Failure, outcomes(tr))
	}
}

func TestScriptedInvalidMoveThenLegal(t *testing.T) {
	d := &fakeDomain{name: "chess", turns: 3}
	// Task 1 is a one-move line b2b3.
	tr, pol := runScripted(t, d, builtinSrc(t, "chess"), []Reply{{Text: "<move>e2e5</move>"}, {Text: "<move>b2b3</move>"}})
	if tr.Reward != 1 || tr.InvalidRetries != 1 {
		t.Fatalf("reward %v invalid retries %d failure %q outcomes %v", tr.Reward, tr.InvalidRetries, tr.Failure, outcomes(tr))
	}
	if tr.Calls[0].Outcome != "invalid_retry" {
		t.Fatalf("outcomes %v", outcomes(tr))
	}
	second := bytesTok.Decode(pol.Requests[1].Prompt)
	if !strings.Contains(second, "e2e5 is not a legal move here") {
		t.Fatalf("second prompt lacks the invalid-move feedback:\n%s", second)
	}
}

func TestScriptedMultiMoveLine(t *testing.T) {
	d := &fakeDomain{name: "chess", turns: 3}
	h, err := Load("h0.star", builtinSrc(t, "chess"), EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	task := d.make(3)[2] // c2c4 c7c5 c1c3
	pol := &Scripted{Replies: map[string][]Reply{task.ID + "#0": {{Text: "<move>c2c4</move>"}, {Text: "Then <move>c1c3</move>"}}}}
	ts, err := Run(context.Background(), h, d, []data.Task{task}, tokens(pol), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].Reward != 1 || ts[0].Turns != 2 {
		t.Fatalf("reward %v turns %d failure %q", ts[0].Reward, ts[0].Turns, ts[0].Failure)
	}
	if p := bytesTok.Decode(pol.Requests[1].Prompt); !strings.Contains(p, "The opponent replied c7c5.") {
		t.Fatalf("second prompt lacks the defender's reply:\n%s", p)
	}
}

func TestScriptedToolResultInNextPrompt(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	tr, pol := runScripted(t, d, builtinSrc(t, "math"), []Reply{{Text: "<tool>calc: 4 + 9</tool>"}, {Text: "So <answer>13</answer>"}})
	if tr.Reward != 1 || len(tr.Tools) != 1 || tr.Tools[0].Result != "13" || tr.Tools[0].Tool != "calc" {
		t.Fatalf("reward %v tools %+v", tr.Reward, tr.Tools)
	}
	if p := bytesTok.Decode(pol.Requests[1].Prompt); !strings.Contains(p, "<|im_start|>tool\ncalc result: 13<|im_end|>") {
		t.Fatalf("second prompt lacks the tool result:\n%s", p)
	}
}

func TestScriptedHarnessIssuedSearch(t *testing.T) {
	d := &fakeDomain{name: "searchqa", turns: 2}
	tr, pol := runScripted(t, d, builtinSrc(t, "searchqa"), []Reply{{Text: "<answer>Founder Person1</answer>"}})
	if tr.Reward != 1 {
		t.Fatalf("reward %v failure %q error %q", tr.Reward, tr.Failure, tr.Error)
	}
	if len(tr.Tools) != 1 || !tr.Tools[0].ByHarness || tr.Tools[0].Args != `{"k":1,"query":"Who founded city number 1?"}` {
		t.Fatalf("want one harness search of the unchanged question; got %+v", tr.Tools)
	}
	p := bytesTok.Decode(pol.Requests[0].Prompt)
	if !strings.Contains(p, "Alpha\nfirst passage about Who founded city number 1?") || strings.Contains(p, "Beta") {
		t.Fatalf("first prompt should hold exactly one passage:\n%s", p)
	}
}

func TestScriptedTurnLimit(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	calls := []Reply{{Text: "<tool>calc: 1+1</tool>"}, {Text: "<tool>calc: 2+2</tool>"}, {Text: "<tool>calc: 3+3</tool>"}, {Text: "<answer>13</answer>"}}
	tr, _ := runScripted(t, d, builtinSrc(t, "math"), calls)
	if tr.Failure != data.FailTurnLimit || tr.Turns != 3 || len(tr.Calls) != 3 {
		t.Fatalf("failure %q turns %d calls %d", tr.Failure, tr.Turns, len(tr.Calls))
	}
}

func TestScriptedContextTruncation(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := strings.Replace(builtinSrc(t, "math"), "CONTEXT_TOKENS = 2048", "CONTEXT_TOKENS = 300", 1)
	src = strings.Replace(src, `"CONTEXT_TOKENS": [1024, 2048, 4096]`, `"CONTEXT_TOKENS": [300, 2048]`, 1)
	long := "<tool>calc: 1+1</tool> " + strings.Repeat("thinking ", 40)
	tr, pol := runScripted(t, d, src, []Reply{{Text: long}, {Text: long}, {Text: "<answer>13</answer>"}})
	if tr.Reward != 1 {
		t.Fatalf("reward %v failure %q error %q", tr.Reward, tr.Failure, tr.Error)
	}
	for i, r := range pol.Requests {
		if len(r.Prompt) > 300 {
			t.Fatalf("prompt %d has %d tokens, over CONTEXT_TOKENS=300", i, len(r.Prompt))
		}
	}
	last := tr.Calls[len(tr.Calls)-1]
	if last.Dropped == 0 {
		t.Fatalf("third call should have dropped old history; calls %+v", tr.Calls)
	}
	p := bytesTok.Decode(pol.Requests[2].Prompt)
	if !strings.Contains(p, "What is 4 plus 9?") {
		t.Fatalf("truncation lost the task:\n%s", p)
	}
}

func TestAntiCheatRejectsInventedAnswer(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := strings.Replace(builtinSrc(t, "math"), "parse_action = _parse_last_tag", "def _invent(text):\n    return {\"kind\": \"answer\", \"text\": \"12\"}\n\nparse_action = _parse_last_tag", 1)
	src = strings.Replace(src, "parse_action = _parse_last_tag", "parse_action = _invent", 1)
	src = strings.Replace(src, `"parse_action": [_parse_last_tag,`, `"parse_action": [_invent, _parse_last_tag,`, 1)
	tr, _ := runScripted(t, d, src, []Reply{{Text: "I have no idea"}})
	if tr.Failure != FailHarness || !strings.Contains(tr.Error, "anti-cheat") {
		t.Fatalf("failure %q error %q", tr.Failure, tr.Error)
	}
}

func TestTrajectoryRecordsTokens(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	tr, pol := runScripted(t, d, builtinSrc(t, "math"), []Reply{{Text: "<answer>13</answer>"}})
	c := tr.Calls[0]
	if !reflect.DeepEqual(c.Prompt, pol.Requests[0].Prompt) || len(c.Completion) != len("<answer>13</answer>")+1 || len(c.LogProbs) != len(c.Completion) {
		t.Fatalf("call record: prompt %d tokens, completion %d, logprobs %d", len(c.Prompt), len(c.Completion), len(c.LogProbs))
	}
	if c.Text != "<answer>13</answer>" || tr.Harness == "" || tr.TaskID != "math-1" {
		t.Fatalf("call text %q harness %q task %q", c.Text, tr.Harness, tr.TaskID)
	}
}

func TestEpisodeTokenBudget(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	h, err := Load("h0.star", builtinSrc(t, "math"), EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	task := d.make(2)[1]
	pol := &Scripted{Replies: map[string][]Reply{task.ID + "#0": {{Text: "<tool>calc: 4 + 9</tool> and some more words"}, {Text: "<answer>13</answer>"}}}}
	ts, err := Run(context.Background(), h, d, []data.Task{task}, tokens(pol), RunOptions{EpisodeTokens: 30})
	if err != nil {
		t.Fatal(err)
	}
	if ts[0].Failure != data.FailTruncated || len(ts[0].Calls) != 1 {
		t.Fatalf("failure %q after %d calls, want truncated after 1", ts[0].Failure, len(ts[0].Calls))
	}
}
