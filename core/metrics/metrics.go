// Package metrics turns a run's stored events into scalars — per weight
// step, harness iteration, evaluation, phase boundary and the run's end —
// and writes them as JSON lines, CSV or TensorBoard event files. The x
// axis of every scalar is the budget spent (model calls) when it was
// recorded; the weight step, harness iteration and round are kept beside
// it.
//
// It reads events only: it never writes to a store, so it can follow a
// live run and export a finished one alike.
package metrics

import (
	"fmt"
	"math"

	"whale/core/engine"
)

// Point is one scalar of a run.
type Point struct {
	// Tag names the scalar ("weights/loss", "eval/val/mean@2", ...).
	Tag string `json:"tag"`
	// Calls is the model calls of training and scoring spent when the
	// value was recorded: the x axis.
	Calls int `json:"calls"`
	// Step and Iteration are the run's weight steps and harness
	// iterations so far, Round its cycle, Phase the phase then.
	Step      int    `json:"step"`
	Iteration int    `json:"iteration"`
	Round     int    `json:"round"`
	Phase     string `json:"phase,omitempty"`
	// Seq is the stored event the value comes from.
	Seq   uint64  `json:"seq"`
	Value float64 `json:"value"`
}

// Extractor turns events into points one at a time, in the order the
// run stored them; it keeps the per-ledger sums that span events.
type Extractor struct {
	trainCalls, searchCalls int
}

// Add returns the points of one event (none for kinds without scalars).
// A value that is not finite is an error naming the event and tag: an
// export never carries one silently.
func (x *Extractor) Add(ev engine.Event) ([]Point, error) {
	p, err := ev.Payload()
	if err != nil {
		return nil, err
	}
	var out []Point
	add := func(tag string, v float64) {
		out = append(out, Point{Tag: tag, Calls: ev.Calls, Step: ev.Step, Iteration: ev.Iteration, Round: ev.Round,
			Phase: string(ev.Phase), Seq: ev.Seq, Value: v})
	}
	switch d := p.(type) {
	case engine.WeightStepData:
		add("weights/step", float64(ev.Step))
		add("weights/reward_mean", d.RewardMean)
		add("weights/kept_fraction", d.KeptFraction)
		if d.Stats.Rollouts > 0 {
			add("weights/entropy", d.Entropy)
		}
		if d.Stats.Updated {
			add("weights/loss", d.Stats.Loss)
			add("weights/grad_norm", d.Stats.GradNorm)
			add("weights/lr", d.Stats.LR)
		}
	case engine.HarnessIterationData:
		add("harness/iteration", float64(ev.Iteration))
		add("harness/best_score", d.Result.BestScore)
		add("harness/calls", float64(d.Result.Calls))
		if g, ok := pairedGain(d); ok {
			add("harness/paired_gain", g)
		}
	case engine.EvalData:
		r := d.Report
		if r.K > 0 {
			add(fmt.Sprintf("eval/%s/mean@%d", d.Split, r.K), r.MeanAtK)
			add(fmt.Sprintf("eval/%s/maj@%d", d.Split, r.K), r.MajAtK)
			add(fmt.Sprintf("eval/%s/pass@%d", d.Split, r.K), r.PassAtK)
		}
	case engine.PhaseRecord:
		add("phase/val_mean", d.ValAfter)
		add("phase/val_pass", d.ValPassAfter)
		add("phase/"+string(d.Kind)+"_calls", float64(d.Calls))
		if d.Entropy != nil {
			add("phase/entropy", *d.Entropy)
		}
		if d.KeptFraction != nil {
			add("phase/kept_fraction", *d.KeptFraction)
		}
		if d.AuditGap != nil {
			add("phase/audit_gap", *d.AuditGap)
		}
		if d.TestAfter != nil {
			add("phase/test_mean", *d.TestAfter)
		}
		switch d.Kind {
		case engine.PhaseWeights:
			x.trainCalls += d.Calls
		case engine.PhaseHarness:
			x.searchCalls += d.Calls
		}
		add("ledger/calls", float64(ev.Calls))
		add("ledger/rollouts", float64(ev.Rollouts))
		add("ledger/weight_phase_calls", float64(x.trainCalls))
		add("ledger/harness_phase_calls", float64(x.searchCalls))
	case engine.Summary:
		add("final/best_val_mean", d.BestValMean)
		if d.BestValMean8 != nil {
			add("final/best_val_mean@8", *d.BestValMean8)
		}
		add(fmt.Sprintf("final/test_mean@%d", d.TestK), d.TestMean8)
		add(fmt.Sprintf("final/test_pass@%d", d.TestK), d.TestPass8)
		add("final/test_ci95_lo", d.TestCI95[0])
		add("final/test_ci95_hi", d.TestCI95[1])
		add("ledger/calls", float64(d.ModelCalls))
		add("ledger/rollouts", float64(d.Rollouts))
		add("ledger/eval_calls", float64(d.EvalCalls))
		add("ledger/eval_rollouts", float64(d.EvalRollouts))
	}
	for _, pt := range out {
		if math.IsNaN(pt.Value) || math.IsInf(pt.Value, 0) {
			return nil, fmt.Errorf("metrics: event %d (%s): %s is %v", ev.Seq, ev.Kind, pt.Tag, pt.Value)
		}
	}
	return out, nil
}

// pairedGain is the largest paired gain over the incumbent among the
// iteration's candidates that were compared with it.
func pairedGain(d engine.HarnessIterationData) (float64, bool) {
	scored := map[string]bool{}
	for _, h := range d.Result.Candidates {
		scored[h] = true
	}
	best, ok := 0.0, false
	for _, r := range d.Board {
		if r.HasGain && scored[r.Hash] && (!ok || r.Gain > best) {
			best, ok = r.Gain, true
		}
	}
	return best, ok
}

// FromEvents is every point of a run's events, in order. Events of a kind
// this build does not know are skipped (a store written by a newer whale).
func FromEvents(evs []engine.Event) ([]Point, error) {
	var x Extractor
	var out []Point
	for _, ev := range evs {
		pts, err := x.Add(ev)
		if err != nil {
			if isUnknown(err) {
				continue
			}
			return nil, err
		}
		out = append(out, pts...)
	}
	return out, nil
}
