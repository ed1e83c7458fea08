package harnesses

import (
	"strconv"
	"strings"
	"testing"

	"whale/data"
)

// votingSrc is the math h0 with SAMPLES set and, if given, an aggregate
// definition spliced in as the aggregate knob's value.
func votingSrc(t *testing.T, samples int, aggregate string) string {
	t.Helper()
	src := builtinSrc(t, "math")
	src = mustReplace(t, src, "SAMPLES = 1\n", "SAMPLES = "+strconv.Itoa(samples)+"\n")
	if aggregate != "" {
		def := strings.Replace(aggregate, "def aggregate(", "def _agg_test(", 1)
		src = mustReplace(t, src, "aggregate = _vote_plurality_valid\n", def+"\n\naggregate = _agg_test\n")
		src = mustReplace(t, src, `"aggregate": [`, `"aggregate": [_agg_test, `)
	}
	return src
}

func mustReplace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("source lacks %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

func TestVotingPluralityPicksTheMajorityAnswer(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	// Task 1 is 4 + 9 = 13: two of three samples say 13.
	src := votingSrc(t, 3, "def aggregate(candidates, state):\n    return vote.plurality(candidates)")
	tr, pol := runScripted(t, d, src, []Reply{{Text: "<answer>12</answer>"}, {Text: "it is <answer>13</answer>"}, {Text: "<answer> 13 </answer>"}})
	if tr.Reward != 1 {
		t.Fatalf("reward %v failure %q error %q; want the plurality 13 chosen", tr.Reward, tr.Failure, tr.Error)
	}
	if len(pol.Requests) != 3 || tr.ModelCalls() != 3 {
		t.Fatalf("%d requests, %d model calls; want 3 of each", len(pol.Requests), tr.ModelCalls())
	}
	keys := []string{pol.Requests[0].Key, pol.Requests[1].Key, pol.Requests[2].Key}
	if keys[0] != "math-1#0/0" || keys[1] != "math-1#0/0/v1" || keys[2] != "math-1#0/0/v2" {
		t.Fatalf("sample keys %v", keys)
	}
	for _, r := range pol.Requests[1:] {
		if string(bytesTok.Decode(r.Prompt)) != bytesTok.Decode(pol.Requests[0].Prompt) {
			t.Fatal("the samples of one call must share its prompt")
		}
	}
	// The two passed-over samples come first, then the chosen one, which
	// alone is trained on.
	if !tr.Calls[0].NotChosen || !tr.Calls[1].NotChosen || tr.Calls[2].NotChosen || tr.Calls[2].Sample != 1 || tr.Calls[2].Outcome != "answer" {
		t.Fatalf("calls %+v", outcomes(tr))
	}
	if tr.Calls[0].Sample != 0 || tr.Calls[1].Sample != 2 || tr.Calls[0].Prompt != nil {
		t.Fatalf("not-chosen samples %d %d (prompt kept: %v)", tr.Calls[0].Sample, tr.Calls[1].Sample, tr.Calls[0].Prompt != nil)
	}
	// The transcript holds only the chosen completion.
	assistant := 0
	for _, m := range tr.Messages {
		if m.Role == "assistant" {
			assistant++
			if !strings.Contains(m.Content, "it is <answer>13") {
				t.Fatalf("transcript shows %q, not the chosen completion", m.Content)
			}
		}
	}
	if assistant != 1 {
		t.Fatalf("%d assistant messages, want 1", assistant)
	}
}

func TestVotingDefaultAggregateIgnoresInvalidCandidates(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	// No aggregate: plurality over valid candidates. "x" twice is not a
	// number (invalid), 13 once is valid and wins.
	src := votingSrc(t, 3, "")
	tr, _ := runScripted(t, d, src, []Reply{{Text: "<answer>x</answer>"}, {Text: "<answer>x</answer>"}, {Text: "<answer>13</answer>"}})
	if tr.Reward != 1 || tr.Calls[len(tr.Calls)-1].Sample != 2 {
		t.Fatalf("reward %v, chosen sample %d; want the only valid candidate", tr.Reward, tr.Calls[len(tr.Calls)-1].Sample)
	}
	// vote.plurality (invalid ones count) takes the invalid majority.
	src = votingSrc(t, 3, "def aggregate(candidates, state):\n    return vote.plurality(candidates)")
	tr, _ = runScripted(t, d, src, []Reply{{Text: "<answer>x</answer>"}, {Text: "<answer>x</answer>"}, {Text: "<answer>13</answer>"},
		{Text: "<answer>13</answer>"}, {Text: "<answer>13</answer>"}, {Text: "<answer>x</answer>"}})
	if tr.InvalidRetries != 1 || tr.Calls[len(tr.Calls)-1].Outcome != "answer" {
		t.Fatalf("plurality over all should pick the invalid x and retry; outcomes %v", outcomes(tr))
	}
}

func TestVotingLogProbWeightedPrefersTheLikelierAnswer(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := votingSrc(t, 3, "def aggregate(candidates, state):\n    return vote.logprob_weighted(candidates)")
	// 12 twice but very unlikely; 13 once and likely.
	tr, _ := runScripted(t, d, src, []Reply{{Text: "<answer>12</answer>", LogProb: -3}, {Text: "<answer>12</answer>", LogProb: -3}, {Text: "<answer>13</answer>", LogProb: -0.1}})
	if tr.Reward != 1 {
		t.Fatalf("reward %v; want 13 (probability mass beats count)", tr.Reward)
	}
	// Equal log-probabilities: count decides.
	tr, _ = runScripted(t, d, src, []Reply{{Text: "<answer>12</answer>", LogProb: -1}, {Text: "<answer>12</answer>", LogProb: -1}, {Text: "<answer>13</answer>", LogProb: -1}})
	if tr.Reward != 0 || tr.Failure != data.FailWrong {
		t.Fatalf("reward %v failure %q; want the 12s to win on count", tr.Reward, tr.Failure)
	}
}

func TestAggregateSeesCandidatesAndNextStepSeesTheLastCompletion(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := votingSrc(t, 2, `def aggregate(candidates, state):
    for c in candidates:
        if c["index"] != candidates.index(c) or c["tokens"] <= 0 or c["finish"] != "stop" or type(c["logprob"]) != "float":
            fail("bad candidate")
    state["seen"] = [c["text"] for c in candidates]
    return candidates[1]`)
	src = strings.Replace(src, "next_step = _route_free", `def _route_echo(state):
    if state["last_completion"] != "" and "calc" in state["last_completion"] and "seen" not in state:
        fail("aggregate did not run before next_step")
    return None
next_step = _route_echo`, 1)
	src = mustReplace(t, src, `"next_step": [_route_free,`, `"next_step": [_route_echo, _route_free,`)
	tr, _ := runScripted(t, d, src, []Reply{{Text: "<tool>calc: 4+8</tool>"}, {Text: "<tool>calc: 4+9</tool>"}, {Text: "<answer>12</answer>"}, {Text: "<answer>13</answer>"}})
	if tr.Failure == FailHarness {
		t.Fatalf("harness error: %s", tr.Error)
	}
	if tr.Reward != 1 || len(tr.Tools) != 1 || tr.Tools[0].Args != "4+9" {
		t.Fatalf("reward %v tools %+v; want candidate 1 chosen at both calls", tr.Reward, tr.Tools)
	}
}

func TestAggregateMayNotWriteItsOwnAnswer(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	cases := map[string]string{
		"new dict": `def aggregate(candidates, state):
    return {"index": 0, "action": {"kind": "answer", "text": "13"}, "valid": True}`,
		"action only": `def aggregate(candidates, state):
    return candidates[0]["action"]`,
		"none": `def aggregate(candidates, state):
    return None`,
		"mutate": `def aggregate(candidates, state):
    candidates[0]["action"]["text"] = "13"
    return candidates[0]`,
		"mutate list": `def aggregate(candidates, state):
    candidates.append(candidates[0])
    return candidates[0]`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			tr, _ := runScripted(t, d, votingSrc(t, 2, body), []Reply{{Text: "<answer>12</answer>"}, {Text: "<answer>11</answer>"}})
			if tr.Failure != FailHarness || tr.Reward != 0 {
				t.Fatalf("failure %q reward %v; want harness_error", tr.Failure, tr.Reward)
			}
			if !strings.Contains(tr.Error, "test.star:") {
				t.Fatalf("error %q does not name the harness line", tr.Error)
			}
			if tr.ModelCalls() != 2 {
				t.Fatalf("%d model calls recorded, want both samples", tr.ModelCalls())
			}
		})
	}
}

func TestSamplesIsValidated(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	for _, bad := range []string{"0", "17", "\"4\""} {
		src := strings.Replace(builtinSrc(t, "math"), "TOOLS = [\"calc\"]", "TOOLS = [\"calc\"]\nSAMPLES = "+bad, 1)
		_, err := Load("test.star", src, EnvOf(d))
		if err == nil || !strings.Contains(err.Error(), "SAMPLES") || !strings.Contains(err.Error(), "test.star:") {
			t.Fatalf("SAMPLES = %s: error %v", bad, err)
		}
	}
	src := strings.Replace(builtinSrc(t, "math"), "TOOLS = [\"calc\"]", "TOOLS = [\"calc\"]\ndef aggregate(c):\n    return c[0]", 1)
	if _, err := Load("test.star", src, EnvOf(d)); err == nil || !strings.Contains(err.Error(), "aggregate") {
		t.Fatalf("aggregate with one parameter: error %v", err)
	}
}
