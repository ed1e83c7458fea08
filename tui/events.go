package tui

import (
	"errors"
	"fmt"

	"whale/core/engine"
)

// apply folds one event into the snapshot. A payload that does not decode,
// or a kind this build does not know, is logged, not fatal: the screen
// must survive an engine newer than it.
func (m *Model) apply(ev engine.Event) {
	r := &m.run
	prev := r.rollouts
	// The timeline's axis is the budget spent: model calls.
	r.rollouts = max(r.rollouts, ev.Calls)
	r.episodes = max(r.episodes, ev.Rollouts)
	if ev.Round > 0 {
		r.round = ev.Round
	}
	r.step, r.iter = ev.Step, ev.Iteration
	p, err := ev.Payload()
	if errors.Is(err, engine.ErrUnknownEvent) {
		m.logLine(fmt.Sprintf("#%-5d %s", ev.Seq, ev.Kind))
		return
	}
	if err != nil {
		m.logLine(fmt.Sprintf("#%d %s: payload unreadable: %v", ev.Seq, ev.Kind, err))
		return
	}
	var line string
	switch d := p.(type) {
	case nil:
		line = "run resumed"
	case engine.Config:
		line = m.runStarted(d)
	case engine.ForkOrigin:
		r.origin = &d
		line = fmt.Sprintf("started from checkpoint %s (run %s, round %d %s; weights %s, harness %s)", d.Checkpoint, d.Run, d.Round, d.Phase, short(d.Weights), short(d.Harness))
	case engine.PhaseStartedData:
		line = m.phaseStarted(ev, d)
	case engine.WeightStepData:
		r.rewards = append(r.rewards, rewardPoint{from: prev, to: ev.Calls, mean: d.RewardMean})
		r.lastStep, r.patience, r.phase = &d, &d.Patience, engine.PhaseWeights
		r.entropies = append(r.entropies, d.Entropy)
		line = fmt.Sprintf("step %d: reward %.3f, kept %d/%d, loss %.4f, entropy %.3f", ev.Step, d.RewardMean, d.Stats.Kept, d.Stats.Rollouts, d.Stats.Loss, d.Entropy)
		if d.Skipped != "" {
			line += " (skipped: " + d.Skipped + ")"
		}
	case engine.HarnessIterationData:
		line = m.harnessIteration(ev, d)
	case engine.PhaseRecord:
		line = m.phaseEnded(ev, d)
	case engine.EvalData:
		if d.Split == "val" && len(r.vals) == 0 {
			r.vals = append(r.vals, valPoint{rollouts: ev.Calls, mean: d.Report.MeanAtK})
		}
		line = fmt.Sprintf("eval %s: mean@%d %.3f", d.Split, d.Report.K, d.Report.MeanAtK)
	case engine.JournaledCommand:
		line = m.control(d)
	case engine.CheckpointData:
		// A checkpoint's val is the one measured at its boundary, which
		// the phase's end reports: the engine keeps the checkpoint
		// first, so it usually arrives just after.
		c := checkpoint{ID: d.ID, Weights: d.Weights, Harness: d.Harness, Round: ev.Round, Step: ev.Step}
		if e := r.ended; e != nil {
			c.Val, c.HasVal, r.ended = e.ValAfter, true, nil
		}
		r.checkpoints = append(r.checkpoints, c)
		line = "checkpoint " + d.ID
	case engine.Summary:
		r.finished, r.summary = true, &d
		if n := len(r.segments); n > 0 && r.segments[n-1].end < 0 {
			r.segments[n-1].end = ev.Calls
		}
		// The summary's TestMean8 is test mean@TestK (8 unless the
		// preset says otherwise): the line names the k it holds.
		k := d.TestK
		if k == 0 {
			k = 8
		}
		line = fmt.Sprintf("run finished: test mean@%d %.3f, best %s %.3f", k, d.TestMean8, valLabel(r.valK), d.BestValMean)
	default:
		line = ev.Kind
	}
	m.logLine(fmt.Sprintf("#%-5d %s", ev.Seq, line))
}

func (m *Model) runStarted(cfg engine.Config) string {
	if cfg.Domain != "" {
		m.opt.Domain = cfg.Domain
	}
	m.opt.Schedule, m.opt.Preset, m.opt.Budget, m.opt.Rounds = cfg.ScheduleName(), cfg.Preset, cfg.TotalBudget(), cfg.MaxRounds
	m.run.valK = cfg.ValK
	return fmt.Sprintf("run started: %s, %s, preset %s", cfg.Domain, cfg.ScheduleName(), cfg.Preset)
}

func (m *Model) phaseStarted(ev engine.Event, d engine.PhaseStartedData) string {
	r := &m.run
	if n := len(r.segments); n > 0 && r.segments[n-1].end < 0 {
		r.segments[n-1].end = ev.Calls
	}
	r.segments = append(r.segments, segment{kind: d.Kind, round: d.Round, start: ev.Calls, end: -1})
	r.phase, r.patience = d.Kind, nil
	return fmt.Sprintf("round %d: %s phase", d.Round, d.Kind)
}

func (m *Model) harnessIteration(ev engine.Event, d engine.HarnessIterationData) string {
	r := &m.run
	r.board, r.patience, r.phase = d.Board, &d.Patience, engine.PhaseHarness
	r.knobs, r.frozen = d.Knobs, map[string]bool{}
	// The engine's board now shows every command it has applied.
	for h, mk := range r.marks {
		if !mk.queued {
			delete(r.marks, h)
		}
	}
	for _, k := range d.Frozen {
		r.frozen[k] = true
	}
	h := &m.panes.harnesses
	h.sel = min(h.sel, max(0, len(r.board)-1))
	line := fmt.Sprintf("iteration %d: %d on the board", ev.Iteration, len(d.Board))
	if len(d.Board) > 0 {
		line += fmt.Sprintf(", best %s %.3f", short(d.Board[0].Hash), d.Board[0].Score)
	}
	return line + d.Result.StarvedText()
}

func (m *Model) phaseEnded(ev engine.Event, rec engine.PhaseRecord) string {
	r := &m.run
	if n := len(r.segments); n > 0 && r.segments[n-1].end < 0 {
		r.segments[n-1].end = ev.Calls
		r.segments[n-1].forced = rec.Forced
		r.segments[n-1].val, r.segments[n-1].hasVal = rec.ValAfter, true
	}
	r.vals = append(r.vals, valPoint{rollouts: ev.Calls, mean: rec.ValAfter})
	r.ended = &rec
	if n := len(r.checkpoints); n > 0 && !r.checkpoints[n-1].HasVal {
		r.checkpoints[n-1].Val, r.checkpoints[n-1].HasVal, r.ended = rec.ValAfter, true, nil
	}
	if len(r.spreads) == 0 {
		r.spreads = append(r.spreads, rec.ValPassBefore-rec.ValBefore)
	}
	r.spreads = append(r.spreads, rec.ValPassAfter-rec.ValAfter)
	line := fmt.Sprintf("round %d: %s phase ended, %s %.3f → %.3f, pass−mean %+.3f", rec.Round, rec.Kind, valLabel(r.valK), rec.ValBefore, rec.ValAfter, rec.ValPassAfter-rec.ValAfter)
	line += rec.HealthText()
	if rec.Forced {
		line += " (forced)"
	}
	return line
}

func (m *Model) control(d engine.JournaledCommand) string {
	r := &m.run
	m.settle(d)
	if d.Error == "" {
		switch d.Kind {
		case "pause":
			r.paused = true
		case "resume":
			r.paused = false
		case "freeze", "unfreeze":
			if r.frozen == nil {
				r.frozen = map[string]bool{}
			}
			r.frozen[d.Target] = d.Kind == "freeze"
		}
	}
	line := "control: " + d.Kind
	if d.Target != "" {
		line += " " + short(d.Target)
	}
	if d.Error != "" {
		line += " refused: " + d.Error
		m.err = line
	}
	return line
}

// valLabel names val mean@k with the run's k ("val mean@k" before the
// run's config is known).
func valLabel(k int) string {
	if k <= 0 {
		return "val mean@k"
	}
	return fmt.Sprintf("val mean@%d", k)
}
