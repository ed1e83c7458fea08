package engine

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"whale/core/eval"
	"whale/core/search"
	"whale/core/weights"
)

// Every kind's payload survives the store: encoded as the engine emits
// it and decoded by Payload, it is the value it was, in its own type.
func TestEveryEventPayloadRoundTrips(t *testing.T) {
	lo := 0.25
	payloads := map[string]any{
		EvRunStarted:   Config{Domain: "math", Seed: 3, Schedule: "fixed", E: 0.5, I: 2, GridKnobs: []string{"A"}},
		EvRunResumed:   nil,
		EvForked:       ForkOrigin{Checkpoint: "r/01-weights", Run: "r", Round: 1, Phase: PhaseWeights, Weights: "w", Harness: "h"},
		EvPhaseStarted: PhaseStartedData{Kind: PhaseHarness, Round: 2, Harness: "h"},
		EvWeightStep: WeightStepData{Stats: weights.Stats{Rollouts: 8, Kept: 3, Loss: 0.5, Updated: true}, Replayed: 1,
			RewardMean: 0.375, Patience: Patience{Done: 2, Min: 1, Max: 4}, Skipped: "x"},
		EvHarnessIteration: HarnessIterationData{Result: search.IterationResult{Candidates: []string{"a", "b"}, Accepted: "a", Changed: true, BestScore: 0.5},
			Patience: Patience{Done: 1}, Knobs: []string{"K"}, Frozen: []string{"K"},
			Board: []BoardRow{{Hash: "a", Score: 0.5, CILo: 0.4, CIHi: 0.6, Gain: 0.1, HasGain: true, NullLift: 0.01, HasNull: true}}},
		EvPhaseEnded:  PhaseRecord{Kind: PhaseWeights, Round: 1, Rollouts: 64, Calls: 70, Steps: 4, ValBefore: 0.1, ValAfter: 0.2, AuditGap: &lo},
		EvEval:        EvalData{Split: "val", Harness: "h", Weights: "w", Report: eval.Report{K: 2, MeanAtK: 0.5, Tasks: 4}},
		EvControl:     JournaledCommand{Command: Command{Kind: "prune", Target: "h"}, Step: 3, Phase: PhaseHarness, Error: "no"},
		EvCheckpoint:  CheckpointData{ID: "r/01-weights", Weights: "w", Harness: "h"},
		EvRunFinished: Summary{RunID: "r", Domain: "math", TestMean8: 0.125, TestCI95: [2]float64{0.1, 0.2}},
	}
	if len(payloads) != len(EventKinds) {
		t.Fatalf("%d payloads for %d kinds: every kind needs a case here", len(payloads), len(EventKinds))
	}
	for _, kind := range EventKinds {
		want, ok := payloads[kind]
		if !ok {
			t.Fatalf("kind %s has no payload in this test", kind)
		}
		ev := Event{Seq: 7, Kind: kind}
		if want != nil {
			ev.Data = mustJSON(want)
		}
		got, err := ev.Payload()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %#v, want %#v", kind, got, want)
		}
	}
}

func TestPayloadNamesUnknownKindsAndBadData(t *testing.T) {
	if _, err := (Event{Seq: 4, Kind: "from_the_future"}).Payload(); !errors.Is(err, ErrUnknownEvent) {
		t.Fatalf("unknown kind: %v, want ErrUnknownEvent", err)
	}
	_, err := (Event{Seq: 9, Kind: EvWeightStep, Data: []byte(`{"reward_mean":"high"}`)}).Payload()
	if err == nil || !strings.Contains(err.Error(), "event 9 (weight_step)") {
		t.Fatalf("bad payload: %v, want an error naming event 9 and its kind", err)
	}
}
