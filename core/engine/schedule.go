package engine

import (
	"fmt"
	"math"
)

// Phase is what the alternation is optimising now.
type Phase string

const (
	PhaseWeights Phase = "weights"
	PhaseHarness Phase = "harness"
)

// Patience is a schedule's view of the running phase, for the TUI's
// patience counters and for events.
type Patience struct {
	Phase Phase `json:"phase"`
	// Done counts weight steps or harness iterations in this phase.
	Done int `json:"done"`
	// Min and Max bound the phase length (Max 0: unbounded).
	Min int `json:"min"`
	Max int `json:"max,omitempty"`
	// Since counts steps or iterations since the last new phase best, and
	// Limit is how many without one end the phase (0 for fixed schedules).
	Since int `json:"since"`
	Limit int `json:"limit,omitempty"`
	// Best is the phase best so far (window mean reward or val score) and
	// Current the latest value; both are meaningful once Done > 0.
	Best    float64 `json:"best"`
	Current float64 `json:"current"`
}

// Schedule decides when a phase ends. Its whole state is in the struct and
// serialisable, so a resumed run decides exactly as the uninterrupted one.
type Schedule interface {
	// Begin starts a phase.
	Begin(p Phase)
	// WeightStep records a finished weight step with its mean training
	// reward and reports whether the weight phase should end.
	WeightStep(reward float64) bool
	// HarnessIteration records a finished harness iteration with the best
	// val score in the archive and reports whether the phase should end.
	HarnessIteration(bestScore float64) bool
	// Patience describes the running phase.
	Patience() Patience
}

// Fixed is the fixed (E, I) schedule of the reference: each cycle runs
// round(E · steps per epoch) weight steps (at least one) and I harness
// iterations, counting the incoming harness's evaluation as the first.
type Fixed struct {
	WeightSteps int `json:"weight_steps"`
	Iterations  int `json:"iterations"`
	State       Patience
}

// NewFixed builds the (E, I) schedule for an epoch of stepsPerEpoch steps.
func NewFixed(E float64, I, stepsPerEpoch int) (*Fixed, error) {
	if !(E > 0) || math.IsInf(E, 0) {
		return nil, fmt.Errorf("schedule: E = %v, want a fraction of an epoch > 0", E)
	}
	if I < 1 {
		return nil, fmt.Errorf("schedule: I = %d, want at least 1 harness iteration", I)
	}
	if stepsPerEpoch < 1 {
		return nil, fmt.Errorf("schedule: %d steps per epoch, want at least 1", stepsPerEpoch)
	}
	return &Fixed{WeightSteps: max(1, int(math.Round(E*float64(stepsPerEpoch)))), Iterations: I}, nil
}

func (f *Fixed) Begin(p Phase) {
	n := f.WeightSteps
	if p == PhaseHarness {
		n = f.Iterations
	}
	f.State = Patience{Phase: p, Min: n, Max: n}
}

func (f *Fixed) WeightStep(reward float64) bool {
	f.State.record(reward)
	return f.State.Done >= f.WeightSteps
}

func (f *Fixed) HarnessIteration(best float64) bool {
	f.State.record(best)
	return f.State.Done >= f.Iterations
}

// record notes a new value; it is a new best only when strictly greater
// than the best so far (the first value always is).
func (p *Patience) record(v float64) {
	p.Done++
	p.Current = v
	if p.Done == 1 || v > p.Best {
		p.Best, p.Since = v, 0
	} else {
		p.Since++
	}
}

func (f *Fixed) Patience() Patience { return f.State }

// Adaptive is the patience rule: a weight phase runs at least MinSteps and
// ends when the sliding-window mean training reward (Window steps) has set
// no new phase best for PatienceSteps steps; a harness phase runs at least
// MinIters iterations, ends after PatienceIters without a new best score,
// and never runs more than MaxIters. Reference: window = patience = minimum
// = 0.2 epoch; 5, 2, 15 iterations.
type Adaptive struct {
	MinSteps      int `json:"min_steps"`
	Window        int `json:"window"`
	PatienceSteps int `json:"patience_steps"`
	MinIters      int `json:"min_iters"`
	PatienceIters int `json:"patience_iters"`
	MaxIters      int `json:"max_iters"`

	State   Patience
	Rewards []float64 `json:"rewards"` // the weight phase's rewards, for the window
}

// NewAdaptive builds the reference adaptive schedule for an epoch of
// stepsPerEpoch steps.
func NewAdaptive(stepsPerEpoch int) (*Adaptive, error) {
	if stepsPerEpoch < 1 {
		return nil, fmt.Errorf("schedule: %d steps per epoch, want at least 1", stepsPerEpoch)
	}
	w := max(1, int(math.Round(0.2*float64(stepsPerEpoch))))
	return &Adaptive{MinSteps: w, Window: w, PatienceSteps: w, MinIters: 5, PatienceIters: 2, MaxIters: 15}, nil
}

// Validate checks the parameters, naming the bad one.
func (a *Adaptive) Validate() error {
	switch {
	case a.MinSteps < 1 || a.Window < 1 || a.PatienceSteps < 1:
		return fmt.Errorf("schedule: adaptive weight parameters must be ≥ 1 (min %d, window %d, patience %d)", a.MinSteps, a.Window, a.PatienceSteps)
	case a.MinIters < 1 || a.PatienceIters < 1:
		return fmt.Errorf("schedule: adaptive harness min (%d) and patience (%d) must be ≥ 1", a.MinIters, a.PatienceIters)
	case a.MaxIters < a.MinIters:
		return fmt.Errorf("schedule: adaptive harness max %d below min %d", a.MaxIters, a.MinIters)
	}
	return nil
}

func (a *Adaptive) Begin(p Phase) {
	a.Rewards = a.Rewards[:0]
	if p == PhaseWeights {
		a.State = Patience{Phase: p, Min: a.MinSteps, Limit: a.PatienceSteps}
	} else {
		a.State = Patience{Phase: p, Min: a.MinIters, Max: a.MaxIters, Limit: a.PatienceIters}
	}
}

func (a *Adaptive) WeightStep(reward float64) bool {
	a.Rewards = append(a.Rewards, reward)
	lo := max(0, len(a.Rewards)-a.Window)
	s := 0.0
	for _, r := range a.Rewards[lo:] {
		s += r
	}
	a.State.record(s / float64(len(a.Rewards)-lo))
	return a.State.Done >= a.MinSteps && a.State.Since >= a.PatienceSteps
}

func (a *Adaptive) HarnessIteration(best float64) bool {
	a.State.record(best)
	if a.State.Done >= a.MaxIters {
		return true
	}
	return a.State.Done >= a.MinIters && a.State.Since >= a.PatienceIters
}

func (a *Adaptive) Patience() Patience { return a.State }
