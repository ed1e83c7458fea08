package engine

import (
	"testing"

	"whale/internal/longtests"
	"whale/kernels"
)

// TestInFlightBoundLeavesTheRunBitIdentical: the bound on a harness run's
// requests in flight (Engine.inFlight) changes which sequences the local
// model decodes together and what its prefix cache still holds, never what
// is sampled: a run with a few requests in flight and one with every
// rollout's end with the same weights, scores and stored samples.
func TestInFlightBoundLeavesTheRunBitIdentical(t *testing.T) {
	longtests.Skip(t, "two tiny runs with the model sampling for itself")
	sameTwoRuns(t, "the bound", func(e *Engine, i int) {
		if e.inFlight != SampleWidth {
			t.Fatalf("the local model's runs keep %d requests in flight, want SampleWidth (%d)", e.inFlight, SampleWidth)
		}
		e.inFlight = []int{3, 0}[i]
	})
}

// sameTwoRuns makes two tiny runs with the model sampling for itself, each
// on a store of its own after set(e, i) adjusts its engine, and fails
// unless they end with the same weights, best checkpoint, scores and
// stored samples (what is named what changed them).
func sameTwoRuns(t *testing.T, what string, set func(e *Engine, i int)) {
	t.Helper()
	cfg := tinyConfig(t)
	// A random model earns no reward: train on every sample so that its
	// weights move and later draws depend on earlier ones.
	cfg.Threshold = 0
	var sums [2]Summary
	var hashes [2][32]byte
	for i := range sums {
		db := openDB(t)
		env := testEnv(t, db)
		env.Policy = nil
		e, err := New(cfg, env, "run")
		if err != nil {
			t.Fatal(err)
		}
		set(e, i)
		if sums[i], err = e.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		hashes[i] = samplesHash(t, db, "run")
	}
	a, b := sums[0], sums[1]
	if a.FinalWeights == a.Phases[0].Weights {
		t.Fatal("the weights never changed: the test would not see a changed trajectory")
	}
	if a.FinalWeights != b.FinalWeights || a.BestCkpt != b.BestCkpt || a.TestMean8 != b.TestMean8 || a.BestValMean != b.BestValMean {
		t.Fatalf("%s changed the run: weights %s / %s, best %s / %s, test %v / %v, val %v / %v", what,
			ShortHash(a.FinalWeights), ShortHash(b.FinalWeights), a.BestCkpt, b.BestCkpt, a.TestMean8, b.TestMean8, a.BestValMean, b.BestValMean)
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("%s changed the stored samples", what)
	}
}

// TestOnlyTheLocalModelIsBoundInFlight: a run whose policy is not the
// local model (here a scripted one) keeps every rollout's request in
// flight, as before: the bound is the local model's decoding width.
func TestOnlyTheLocalModelIsBoundInFlight(t *testing.T) {
	e, err := New(tinyConfig(t), testEnv(t, openDB(t)), "run")
	if err != nil {
		t.Fatal(err)
	}
	if got := e.runOpts("val/", 1).BatchSize; got != 0 {
		t.Fatalf("a scripted policy's runs keep %d requests in flight, want 0 (all)", got)
	}
}

// TestLanesLeaveTheRunBitIdentical: decoding a small local model in lanes
// (Engine.lanes: a stream a kernel thread, on goroutines of their own)
// changes which thread decodes a sequence and when, never what is
// sampled: a run in three lanes and one in a single stream end with the
// same weights, scores and stored samples, and the kernels have all their
// threads again once a run is over.
func TestLanesLeaveTheRunBitIdentical(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(3)
	sameTwoRuns(t, "the lanes", func(e *Engine, i int) {
		if !e.laned || e.lanes() != 3 {
			t.Fatalf("the tiny model on 3 threads decodes in %d lanes (laned %v), want 3", e.lanes(), e.laned)
		}
		e.laned = i == 0
	})
	if kernels.Threads() != 3 {
		t.Fatalf("after the runs the kernels have %d threads, want 3", kernels.Threads())
	}
}
