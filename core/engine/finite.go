package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"whale/core/model"
	"whale/harnesses"
)

// StoppedError ends a run that met a NaN or an infinity: the loss or the
// gradients of a weight step, the weights after it, the logits of a probe
// over them, or the log-probabilities of a sampled rollout. Nothing of
// the failing step is stored; the run stays at its last resume point,
// resumable (with a lower learning rate, say).
type StoppedError struct {
	Run string
	// Where the run was: round, phase, and the weight step or harness
	// iteration being taken.
	Round     int
	Phase     Phase
	Step      int
	Iteration int
	// What went non-finite, in words, naming the tensor or rollout.
	What string
	// ResumeStep and ResumeIteration are the run's last resume point
	// (-1 when it has none).
	ResumeStep, ResumeIteration int
	// LR is the run's learning rate, for the advice.
	LR  float64
	Err error
}

func (e *StoppedError) Error() string {
	at := fmt.Sprintf("weight step %d", e.Step+1)
	if e.Phase == PhaseHarness {
		at = fmt.Sprintf("harness iteration %d", e.Iteration)
	}
	back := "it has no resume point yet and begins again from its start"
	if e.ResumeStep >= 0 {
		back = fmt.Sprintf("it stays at its last resume point (weight step %d, harness iteration %d)", e.ResumeStep, e.ResumeIteration)
	}
	lr := 1e-4
	if e.LR > 0 && e.LR <= lr {
		lr = e.LR / 10
	}
	return fmt.Sprintf("engine: run %s stopped in round %d at %s: %s; nothing of that step was stored and %s: resume it with a lower learning rate than its %g, e.g. 'whale resume %s --headless --lr %g'",
		e.Run, e.Round, at, e.What, back, e.LR, e.Run, lr)
}

func (e *StoppedError) Unwrap() error { return e.Err }

// ErrNonFinite is wrapped by every StoppedError.
var ErrNonFinite = model.ErrNonFinite

// stopNonFinite builds the StoppedError for what went non-finite now.
func (e *Engine) stopNonFinite(what string, err error) error {
	s := &StoppedError{Run: e.RunID, Round: e.st.Round, Phase: e.st.Phase, Step: e.st.Step, Iteration: e.st.Iteration,
		What: what, ResumeStep: -1, ResumeIteration: -1, LR: e.Cfg.LR, Err: err}
	if r, rerr := e.env.Store.GetRun(e.RunID); rerr == nil && len(r.Cursor) > 0 {
		var st State
		if json.Unmarshal(r.Cursor, &st) == nil {
			s.ResumeStep, s.ResumeIteration = st.Step, st.Iteration
		}
	}
	if s.Err == nil {
		s.Err = model.ErrNonFinite
	}
	return s
}

// checkStep checks what a weight step left: the trainable weights, then
// the logits they give on a probe sequence, so weights that overflow the
// activations stop the run before they sample a rollout or reach a resume
// point.
func (e *Engine) checkStep() error {
	m := e.model
	if m == nil {
		return nil
	}
	err := m.CheckTrainable()
	what := "the weights after the step"
	if err == nil {
		err = m.CheckLogits()
		what = "the logits of the weights after the step"
	}
	var nf *model.NonFiniteError
	if errors.As(err, &nf) {
		return e.stopNonFinite(fmt.Sprintf("%s went non-finite (%s)", what, nf.Where()), err)
	}
	return err
}

// finiteRollouts checks the numbers a policy reported with each sampled
// completion (its tokens' log-probabilities and its entropy): a NaN there
// means the logits were not finite, and it must never reach the store's
// JSON (encoding/json refuses it).
func (e *Engine) finiteRollouts(ts []harnesses.Trajectory, what string) error {
	if err := NonFiniteRollout(ts); err != nil {
		return e.stopNonFinite(fmt.Sprintf("the logits went non-finite while sampling %s (%v)", what, err), model.ErrNonFinite)
	}
	return nil
}

// NonFiniteRollout returns an error naming the first completion of ts
// whose log-probabilities, entropy or reward are NaN or infinite (task,
// sample, call, token), nil when all are finite.
func NonFiniteRollout(ts []harnesses.Trajectory) error {
	for _, t := range ts {
		if math.IsNaN(t.Reward) || math.IsInf(t.Reward, 0) {
			return fmt.Errorf("task %s sample %d: reward %v", t.TaskID, t.Sample, t.Reward)
		}
		for ci, c := range t.Calls {
			if !finite(float64(c.Entropy)) {
				return fmt.Errorf("task %s sample %d call %d: entropy %v", t.TaskID, t.Sample, ci, c.Entropy)
			}
			for i, lp := range c.LogProbs {
				if !finite(float64(lp)) {
					return fmt.Errorf("task %s sample %d call %d token %d: log-probability %v", t.TaskID, t.Sample, ci, i, lp)
				}
			}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkedJSON is mustJSON for records that carry numbers from a model
// (samples): a value JSON cannot hold is an error naming the record, not
// a panic.
func checkedJSON(what string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("engine: %s cannot be stored: %w", what, err)
	}
	return b, nil
}
