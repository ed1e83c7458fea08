package engine

import "testing"

// run feeds values to a phase until the schedule ends it (or values run
// out) and returns how many it consumed.
func run(s Schedule, p Phase, vals []float64) int {
	s.Begin(p)
	for i, v := range vals {
		var end bool
		if p == PhaseWeights {
			end = s.WeightStep(v)
		} else {
			end = s.HarnessIteration(v)
		}
		if end {
			return i + 1
		}
	}
	return -1
}

func TestFixedSchedule(t *testing.T) {
	f, err := NewFixed(0.6, 6, 64)
	if err != nil {
		t.Fatal(err)
	}
	if f.WeightSteps != 38 { // round(0.6·64)
		t.Fatalf("weight steps %d, want 38", f.WeightSteps)
	}
	if n := run(f, PhaseWeights, make([]float64, 100)); n != 38 {
		t.Fatalf("weight phase ended after %d steps", n)
	}
	if n := run(f, PhaseHarness, make([]float64, 100)); n != 6 {
		t.Fatalf("harness phase ended after %d iterations", n)
	}
	if g, _ := NewFixed(0.01, 1, 10); g.WeightSteps != 1 {
		t.Fatalf("a tiny E must still run one step, got %d", g.WeightSteps)
	}
	for _, bad := range []struct {
		E    float64
		I, S int
	}{{0, 6, 64}, {0.6, 0, 64}, {0.6, 6, 0}} {
		if _, err := NewFixed(bad.E, bad.I, bad.S); err == nil {
			t.Errorf("NewFixed(%v, %d, %d) accepted", bad.E, bad.I, bad.S)
		}
	}
}

func TestAdaptiveWeightPhase(t *testing.T) {
	a := &Adaptive{MinSteps: 3, Window: 2, PatienceSteps: 2, MinIters: 5, PatienceIters: 2, MaxIters: 15}
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	// Window means: 1, 1.5, 2.5, 3.5, 3.5, 3.5 → best set at step 4, then
	// two steps without a new best end the phase at step 6.
	if n := run(a, PhaseWeights, []float64{1, 2, 3, 4, 3, 4, 9, 9}); n != 6 {
		t.Fatalf("adaptive weight phase ended after %d steps, want 6", n)
	}
	// A flat stream still runs the minimum.
	if n := run(a, PhaseWeights, []float64{0, 0, 0, 0, 0}); n != 3 {
		t.Fatalf("flat stream ended after %d steps, want the minimum 3", n)
	}
	// A rising stream never ends.
	if n := run(a, PhaseWeights, []float64{1, 2, 3, 4, 5, 6, 7, 8}); n != -1 {
		t.Fatalf("rising stream ended after %d steps", n)
	}
}

func TestAdaptiveHarnessPhase(t *testing.T) {
	a, _ := NewAdaptive(64)
	if a.MinSteps != 13 || a.Window != 13 {
		t.Fatalf("reference 0.2 epoch of 64 steps should be 13, got %d/%d", a.MinSteps, a.Window)
	}
	// New bests at 1..4, then stalls: min 5 reached at iteration 5 with
	// since = 1, ends at iteration 6.
	if n := run(a, PhaseHarness, []float64{.1, .2, .3, .4, .4, .4, .4}); n != 6 {
		t.Fatalf("harness phase ended after %d, want 6", n)
	}
	// Keeps improving: capped at 15.
	vals := make([]float64, 30)
	for i := range vals {
		vals[i] = float64(i)
	}
	if n := run(a, PhaseHarness, vals); n != 15 {
		t.Fatalf("improving harness phase ended after %d, want the cap 15", n)
	}
	p := a.Patience()
	if p.Phase != PhaseHarness || p.Done != 15 || p.Since != 0 || p.Best != 14 {
		t.Fatalf("patience %+v", p)
	}
	bad := *a
	bad.MaxIters = 2
	if bad.Validate() == nil {
		t.Fatal("max below min accepted")
	}
}
