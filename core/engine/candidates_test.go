package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"whale/core/search"
	"whale/kernels"
)

// countingHarness loads only while LOAD_N is small: its top level loops
// LOAD_N times, and 999999 turns is past the load step limit. Its
// SEARCH_SPACE is within the contract, so no static check can know.
const countingHarness = `SYSTEM_PROMPT = "Answer as <answer>N</answer>."
USER_PROMPT = "{observation}"
FORMAT_RETRY_BUDGET = 1
INVALID_RETRY_BUDGET = 1
MAX_TURNS = 3
TOOLS = ["calc"]
CONTEXT_TOKENS = 1024
LOAD_N = 10

def _count(n):
    k = 0
    for i in range(n):
        k += i
    return k

_TOTAL = _count(LOAD_N)

def format_observation(obs, state):
    return obs["text"]

def parse_action(text):
    m = re.search(r"<answer>(.*?)</answer>", text)
    if m == None:
        return None
    return {"kind": "answer", "text": m[1]}

def is_valid_action(obs, action):
    return True

SEARCH_SPACE = {"LOAD_N": [10, 20, 999999]}
`

// A candidate that does not load is refused and recorded, with the
// loader's reason, in the archive and on the leaderboard; the run goes on
// to its end instead of failing on it, and so does a run stopped before
// the refusal and resumed, to the same end.
func TestRunRefusesACandidateThatDoesNotLoadAndGoesOn(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Condition, cfg.MaxRounds, cfg.Budget, cfg.Proposer = "harness-only", 0, 120, "mutation"
	cfg.Harness = countingHarness
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "bad-cand")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatalf("the run failed on a candidate: %v", err)
	}
	var bad *search.Entry
	for _, ent := range e.State().Archive.Entries {
		if ent.Status == search.StatusInvalid {
			bad = ent
		}
	}
	if bad == nil || !strings.Contains(bad.Source, "LOAD_N = 999999") || !strings.Contains(bad.Invalid, "too many steps") || !strings.Contains(bad.Invalid, ".star:") {
		t.Fatalf("want the LOAD_N = 999999 candidate refused with the loader's file:line and reason, got %+v", bad)
	}
	shown := false
	for _, ev := range events(t, db, "bad-cand") {
		if ev.Kind != EvHarnessIteration {
			continue
		}
		var d HarnessIterationData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		for _, row := range d.Board {
			if row.Hash == bad.Hash && row.Status == string(search.StatusInvalid) && row.Invalid == bad.Invalid {
				shown = true
			}
		}
	}
	if !shown {
		t.Fatal("the refused candidate is not on any leaderboard event as invalid with its reason")
	}

	dbB := openDB(t)
	b, err := New(cfg, testEnv(t, dbB), "bad-cand")
	if err != nil {
		t.Fatal(err)
	}
	b.stopAfter = func(st State) bool { return st.Iteration == 1 } // the incumbent scored, nothing proposed
	if _, err := b.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("stop before the refusal: %v", err)
	}
	envC := testEnv(t, dbB)
	envC.Bundle = nil
	c, err := Resume(envC, kernels.NewCPU(), "bad-cand")
	if err != nil {
		t.Fatal(err)
	}
	sumC, err := c.Run(context.Background())
	if err != nil {
		t.Fatalf("the resumed run failed on a candidate: %v", err)
	}
	if got := c.State().Archive.Entries[bad.Hash]; got == nil || got.Status != search.StatusInvalid || sumC.FinalHarness != sum.FinalHarness {
		t.Fatalf("resumed: refused entry %+v, final harness %s (uninterrupted: %s)", got, sumC.FinalHarness, sum.FinalHarness)
	}
}
