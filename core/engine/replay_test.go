package engine

import (
	"testing"

	"whale/core/weights"
	"whale/data"
	"whale/harnesses"
)

func TestReplayReverifiesUnderTheCurrentHarness(t *testing.T) {
	db := openDB(t)
	env := testEnv(t, db)
	cfg := tinyConfig(t)
	cfg.Replay = 2
	e, err := New(cfg, env, "replay")
	if err != nil {
		t.Fatal(err)
	}
	h0 := e.st.Archive.Incumbent
	src, _ := harnesses.Mutate(e.st.Archive.Entries[h0].Source, "parse_action", "_parse_first_tag")
	first, err := harnesses.Load("first.star", src, harnesses.EnvOf(env.Domain))
	if err != nil {
		t.Fatal(err)
	}
	e.st.Step = 5
	e.st.Replay = []replayed{
		// Read as "2" by h0 (last tag); the first-tag harness reads "1": dropped.
		{Sample: weights.Sample{Group: "a"}, Step: 4, Harness: h0, Text: "<answer>1</answer> <answer>2</answer>", Action: data.Action{Kind: data.ActAnswer, Text: "2"}},
		// Read the same by both: kept.
		{Sample: weights.Sample{Group: "b"}, Step: 4, Harness: h0, Text: "so <answer>5</answer>", Action: data.Action{Kind: data.ActAnswer, Text: "5"}},
		// Too old for a replay window of 2 steps: forgotten.
		{Sample: weights.Sample{Group: "c"}, Step: 2, Harness: h0, Text: "<answer>7</answer>", Action: data.Action{Kind: data.ActAnswer, Text: "7"}},
	}
	got, dropped, err := e.replaySamples(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Group != "b" || dropped != 1 || len(e.st.Replay) != 1 {
		t.Fatalf("replayed %v, dropped %d, buffer %d; want only b, one dropped", got, dropped, len(e.st.Replay))
	}
	cfg.Operator = "dpo"
	if cfg.Validate() == nil {
		t.Fatal("replay with DPO accepted")
	}
}
