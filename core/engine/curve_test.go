package engine

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"

	"whale/core/store"
)

// samplesHash is the sha256 of every sample run stored, in order: the
// trajectories its weight steps and harness scoring drew.
func samplesHash(t *testing.T, db *store.DB, run string) [32]byte {
	t.Helper()
	h := sha256.New()
	n := 0
	if err := db.Samples(run, 0, func(_ uint64, s []byte) error { n++; h.Write(s); return nil }); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("run %s stored no samples", run)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// Sparse learning curves measure test at fewer boundaries and change
// nothing else: the same weights after every phase, the same stored
// samples, val measurements, best checkpoint and final test score, and
// at the boundaries both measure, the same test score. With the scripted
// policy and with the model sampling for itself (whose prefix cache sees
// the test prompts only in the dense run).
func TestSparseCurvesLeaveTheTrainingBitIdentical(t *testing.T) {
	for _, pol := range []string{"scripted", "model"} {
		t.Run(pol, func(t *testing.T) {
			cfg := tinyConfig(t)
			cfg.MaxRounds, cfg.CurveTest, cfg.CurveK = 4, true, 1
			if pol == "model" {
				// A random model earns no reward: train on every sample so
				// that its weights move.
				cfg.Threshold = 0
			}
			run := func(sparse bool) (Summary, *Engine, *store.DB) {
				c := cfg
				c.CurveSparse = sparse
				db := openDB(t)
				env := testEnv(t, db)
				if pol == "model" {
					env.Policy = nil
				}
				sum, e := runIn(t, c, env, "run")
				return sum, e, db
			}
			dense, de, ddb := run(false)
			sparse, se, sdb := run(true)

			if n := len(dense.Phases); n != 8 {
				t.Fatalf("%d phases, want 8 (4 rounds of two)", n)
			}
			moved := false
			for _, p := range dense.Phases {
				moved = moved || p.Weights != dense.Phases[0].Weights
			}
			if !moved && dense.FinalWeights == dense.Phases[0].Weights {
				t.Fatal("the weights never changed: the test would not see a changed trajectory")
			}
			if dense.FinalWeights != sparse.FinalWeights || dense.BestCkpt != sparse.BestCkpt ||
				dense.TestMean8 != sparse.TestMean8 || dense.BestValMean != sparse.BestValMean {
				t.Fatalf("sparse curves changed the run: weights %s / %s, best %s / %s, test %v / %v, val %v / %v",
					ShortHash(dense.FinalWeights), ShortHash(sparse.FinalWeights), dense.BestCkpt, sparse.BestCkpt,
					dense.TestMean8, sparse.TestMean8, dense.BestValMean, sparse.BestValMean)
			}
			if samplesHash(t, ddb, "run") != samplesHash(t, sdb, "run") {
				t.Fatal("sparse curves changed the stored samples")
			}
			prev := de.st.Phases[0].Weights + "?" // no boundary before the first
			for i := range dense.Phases {
				d, s := dense.Phases[i], sparse.Phases[i]
				n := i + 1
				want := n == 1 || n == 2 || n == 4 || n == len(dense.Phases)
				// A boundary whose checkpoint is the previous one's (a
				// harness phase that accepted nothing) repeats the dense
				// run's score; the sparse run may measure it there afresh.
				fresh := d.Weights+"|"+d.Harness != prev
				prev = d.Weights + "|" + d.Harness
				switch {
				case d.TestAfter == nil:
					t.Fatalf("dense curves: boundary %d has no test score", n)
				case want && s.TestAfter == nil:
					t.Fatalf("sparse curves: boundary %d has no test score", n)
				case want && fresh && *s.TestAfter != *d.TestAfter:
					t.Fatalf("sparse curves: boundary %d's test score %v, want the dense run's %v", n, *s.TestAfter, *d.TestAfter)
				case !want && s.TestAfter != nil:
					t.Fatalf("sparse curves: boundary %d measured test (%v): want only 1, 2, 4 and the last", n, *s.TestAfter)
				}
				d.TestAfter, s.TestAfter = nil, nil
				if a, b := mustJSON(d), mustJSON(s); !bytes.Equal(a, b) {
					t.Fatalf("boundary %d differs beyond its test score:\n%s\n%s", n, a, b)
				}
			}
			dl, sl := de.State().Ledger, se.State().Ledger
			if dl.Train != sl.Train || dl.Search != sl.Search || dl.TrainCalls != sl.TrainCalls || dl.SearchCalls != sl.SearchCalls {
				t.Fatalf("ledgers differ beyond evaluation: %+v / %+v", dl, sl)
			}
			if sl.Eval >= dl.Eval {
				t.Fatalf("sparse curves evaluated %d episodes, dense %d: nothing saved", sl.Eval, dl.Eval)
			}
		})
	}
}

func TestCurvePointsAreThePowersOfTwoAndTheLast(t *testing.T) {
	c := Config{CurveTest: true, CurveSparse: true}
	var got []int
	for n := 1; n <= 20; n++ {
		if c.curvePoint(n, n == 20) {
			got = append(got, n)
		}
	}
	if want := []int{1, 2, 4, 8, 16, 20}; !slices.Equal(got, want) {
		t.Fatalf("sparse points %v, want %v", got, want)
	}
	c.CurveSparse = false
	if !c.curvePoint(3, false) {
		t.Fatal("dense curves skipped boundary 3")
	}
	c.CurveTest = false
	if c.curvePoint(1, true) {
		t.Fatal("a run without curves measured a boundary")
	}
	bad := tinyConfig(t)
	bad.CurveSparse = true
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "curve_sparse") {
		t.Fatalf("curve_sparse without curve_test: %v, want an error naming the field", err)
	}
}
