package engine

import "time"

// Timings is where this process's share of a run's wall time went: the
// rollouts of weight steps and of harness scoring, the weight operator's
// updates, evaluation (val, audit, test), and the store (events, samples,
// harnesses, checkpoints, resume points, with the hashing of weights they
// need). It is wall time, so it varies from run to run and is never part
// of a run's state; the rest of a run's time is the harness runtime's own
// work between those (search bookkeeping, the null-policy audit).
type Timings struct {
	Sampling   time.Duration
	Training   time.Duration
	Evaluation time.Duration
	Store      time.Duration
}

// Timings returns the time spent so far by this process.
func (e *Engine) Timings() Timings { return e.times }

// timeInto starts a clock that adds to *d when the returned func is
// called; store time inside it is not counted twice.
func (e *Engine) timeInto(d *time.Duration) func() {
	start, store := time.Now(), e.times.Store
	return func() { *d += time.Since(start) - (e.times.Store - store) }
}

// timeStore is timeInto for the store, which nests inside the others.
func (e *Engine) timeStore() func() {
	if e.storeDepth++; e.storeDepth > 1 {
		return func() { e.storeDepth-- }
	}
	start := time.Now()
	return func() { e.storeDepth--; e.times.Store += time.Since(start) }
}
