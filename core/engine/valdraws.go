package engine

import (
	"context"
	"fmt"

	"whale/core/eval"
	"whale/core/search"
	"whale/data"
	"whale/harnesses"
)

// The val measurement at a phase boundary after new weights and the
// harness phase's first score of the incumbent are the same rollouts: the
// same weights, the same harness, the same tasks. The boundary therefore
// draws its ValK samples of a task as the scorer's passes 0 … ValK−1 (the
// scoring keys, scoreKeyPrefix), keeps the outcomes (State.ValDraws), and
// the scorer takes the incumbent's score from them instead of paying for
// it again. Only a boundary under weights no harness was scored under yet
// does this: after a harness phase the scoring draws chose the incumbent,
// and a val measurement on them would be the selection's own optimism.

// ValDraws are the per-pass val outcomes of one harness under one set of
// weights, by task id.
type ValDraws struct {
	Weights string                      `json:"weights"`
	Harness string                      `json:"harness"`
	Passes  []map[string]search.Outcome `json:"passes"`
}

// pairedVal reports whether the next val measurement draws as the scorer
// does: no harness has been scored under the current weights yet.
func (e *Engine) pairedVal() bool { return e.st.Archive.Weights != e.st.Weights }

// evalValPaired measures the incumbent on val with ValK samples a task,
// sample j drawn as the scorer's pass j, books them as evaluation and
// keeps them for the scorer (State.ValDraws).
func (e *Engine) evalValPaired(ctx context.Context) (eval.Report, error) {
	hash := e.st.Archive.Incumbent
	h, err := e.harness(hash)
	if err != nil {
		return eval.Report{}, err
	}
	draws := &ValDraws{Weights: e.st.Weights, Harness: hash}
	// The passes decode together (a task's passes share its prompt: about
	// 0.6 of the time of one call per pass), each drawing what it would
	// alone (harnesses.RunOptions.Passes).
	opts := e.runOpts(scoreKeyPrefix(e.st.Weights, 0), 1) // the prefix names the work for progress; Passes key the draws
	for j := 0; j < e.Cfg.ValK; j++ {
		opts.Passes = append(opts.Passes, scoreKeyPrefix(e.st.Weights, j))
	}
	stop := e.timeInto(&e.times.Evaluation)
	ts, err := harnesses.Run(ctx, h, e.env.Domain, e.val, e.pol, opts)
	stop()
	if err != nil {
		return eval.Report{}, err
	}
	all := make([]harnesses.Trajectory, 0, len(ts)) // pass by pass, as they are booked
	for j := 0; j < e.Cfg.ValK; j++ {
		pass := map[string]search.Outcome{}
		for i := j; i < len(ts); i += e.Cfg.ValK {
			o := ts[i]
			pass[o.TaskID] = search.Outcome{Reward: o.Reward, Failure: string(o.Failure), Calls: o.ModelCalls()}
			all = append(all, o)
		}
		draws.Passes = append(draws.Passes, pass)
	}
	e.st.ValDraws = draws
	return e.bookEval(data.SplitVal, hash, all)
}

// reusedDraws returns the outcomes of harness hash on tasks at pass from
// the boundary's val draws, when they hold exactly that score under the
// current weights.
func (e *Engine) reusedDraws(hash string, tasks []data.Task, pass int) ([]search.Outcome, bool) {
	d := e.st.ValDraws
	if d == nil || d.Weights != e.st.Weights || d.Harness != hash || pass >= len(d.Passes) {
		return nil, false
	}
	out := make([]search.Outcome, len(tasks))
	for i, t := range tasks {
		o, ok := d.Passes[pass][t.ID]
		if !ok {
			return nil, false
		}
		o.Reused = true
		out[i] = o
	}
	return out, true
}

// bookEval books evaluation trajectories of harness hash on split name in
// the ledger, summarises them and emits the measurement.
func (e *Engine) bookEval(name, hash string, ts []harnesses.Trajectory) (eval.Report, error) {
	if err := e.finiteRollouts(ts, "the "+name+" evaluation's rollouts"); err != nil {
		return eval.Report{}, err
	}
	e.st.Ledger.Eval += len(ts)
	e.st.Ledger.EvalCalls += modelCalls(ts)
	e.st.Ledger.EvalTokens += completionTokens(ts)
	outs := make([]eval.Outcome, len(ts))
	for i, t := range ts {
		outs[i] = eval.Outcome{TaskID: t.TaskID, Reward: t.Reward, Failure: string(t.Failure), Answer: t.FinalAnswer()}
	}
	e.lastPerTask = eval.TaskMeans(outs)
	rep, err := eval.Summarise(outs, e.Cfg.Seed)
	if err != nil {
		return rep, fmt.Errorf("engine: %s measurement: %w", name, err)
	}
	return rep, e.emit(EvEval, mustJSON(EvalData{Split: name, Harness: hash, Weights: e.st.Weights, Report: rep, Tasks: e.lastPerTask}))
}
