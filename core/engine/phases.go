package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"whale/core/eval"
	"whale/core/model"
	"whale/core/search"
	"whale/core/store"
	"whale/core/weights"
	"whale/data"
	"whale/harnesses"
)

// weightStep samples G rollouts for each of P train tasks through the
// incumbent harness, lets the operator update the weights and reports
// whether the schedule ends the phase.
func (e *Engine) weightStep(ctx context.Context) (bool, error) {
	h, err := e.harness(e.st.Archive.Incumbent)
	if err != nil {
		return false, err
	}
	tasks := e.trainBatch(e.st.Step)
	stop := e.timeInto(&e.times.Sampling)
	e.fleetLag(e.syncEvery() - 1)
	ts, hs, err := e.runAssigned(ctx, tasks, e.rolloutHarnesses(tasks), fmt.Sprintf("w%d/", e.st.Step), e.Cfg.Group)
	e.fleetLag(0)
	stop()
	if err != nil {
		return false, err
	}
	e.st.Ledger.Train += len(ts)
	e.st.Ledger.TrainCalls += modelCalls(ts)
	e.st.Ledger.TrainTokens += completionTokens(ts)
	if ts, hs, err = e.fleetKeep(ts, hs); err != nil {
		return false, err
	}
	samples := make([]weights.Sample, len(ts))
	mean := 0.0
	for i, t := range ts {
		s := weights.Sample{Group: t.TaskID, Reward: t.Reward, Failure: string(t.Failure)}
		for _, c := range t.Calls {
			if c.Trained() {
				s.Calls = append(s.Calls, weights.Call{Prompt: c.Prompt, Completion: c.Completion, LogProbs: c.LogProbs})
			}
		}
		samples[i] = s
		mean += t.Reward
	}
	mean /= float64(len(ts))
	d := WeightStepData{RewardMean: mean, Entropy: meanEntropy(ts)}
	fresh := samples
	byID := make(map[string]data.Task, len(tasks))
	for _, t := range tasks {
		byID[t.ID] = t
	}
	if extra := e.voteExtras(byID, ts, samples); len(extra) > 0 {
		d.VoteExtra = len(extra)
		samples = append(append([]weights.Sample(nil), samples...), extra...)
	}
	if e.Cfg.Replay > 0 {
		var old []weights.Sample
		if old, d.ReplayDropped, err = e.replaySamples(h); err != nil {
			return false, err
		}
		d.Replayed = len(old)
		samples = append(append([]weights.Sample(nil), samples...), old...)
	}
	stop = e.timeInto(&e.times.Training)
	// Sampling's kept caches and training's activations take turns with
	// the memory, rather than adding up.
	if r, ok := e.pol.(interface{ ReleaseCaches() error }); ok {
		if err := r.ReleaseCaches(); err != nil {
			stop()
			return false, err
		}
	}
	d.Stats, err = e.op.Step(samples)
	e.model.ReleaseActivations()
	if e.ref != nil {
		e.ref.ReleaseActivations()
	}
	stop()
	if errors.Is(err, model.ErrNonFinite) {
		// The trainer refused the step and left the weights as they were:
		// the run stops at its last resume point, to go on with another
		// learning rate.
		return false, e.stopNonFinite(fmt.Sprintf("the step's %v", err), err)
	} else if err != nil {
		return false, err
	}
	if d.Stats.Updated {
		if err := e.checkStep(); err != nil {
			return false, err
		}
	}
	if err := e.storeSamples(ts, hs, "w"); err != nil {
		return false, err
	}
	if e.Cfg.Replay > 0 {
		e.remember(ts, fresh)
	}
	kept := 0
	for _, s := range fresh {
		if s.Reward >= e.Cfg.Threshold {
			kept++
		}
	}
	d.KeptFraction = float64(kept) / float64(len(fresh))
	e.st.Ledger.TrainKept += kept
	e.st.Ledger.TrainExtra += d.VoteExtra
	e.st.Health.add(d.Entropy, kept, len(fresh))
	e.st.Step++
	e.st.PhaseSteps++
	end := e.st.schedule().WeightStep(mean)
	d.Patience = e.st.schedule().Patience()
	if d.Stats.Updated {
		e.st.Weights = e.hashWeights()
	}
	// The optimizer moved (its step count at least): stored, with the
	// weights, at the next resume point or kept checkpoint.
	e.dirty = true
	return end, e.emit(EvWeightStep, mustJSON(d))
}

// meanEntropy is the token-weighted mean entropy of every completion in
// ts (0 when the policy reports none).
func meanEntropy(ts []harnesses.Trajectory) float64 {
	var sum float64
	n := 0
	for _, t := range ts {
		for _, c := range t.Calls {
			sum += float64(c.Entropy) * float64(len(c.Completion))
			n += len(c.Completion)
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// SampleRecord is how a rollout is stored: the trajectory plus why it was
// kept or rejected and which harness and weights produced it.
type SampleRecord struct {
	Kind       string               `json:"kind"` // "w" (weight step) or "s" (harness scoring)
	Step       int                  `json:"step"`
	Iteration  int                  `json:"iteration"`
	Round      int                  `json:"round"`
	Kept       bool                 `json:"kept"`
	Why        string               `json:"why"`
	Harness    string               `json:"harness"`
	Weights    string               `json:"weights"`
	Trajectory harnesses.Trajectory `json:"trajectory"`

	// Policy is the adapter a fleet served the sample from ("": the
	// local model, or a server's own).
	Policy string `json:"policy,omitempty"`
}

// storeSamples keeps every rejected rollout with its reason and the first
// kept one of each group (a sample of the kept); hs names the harness of
// each trajectory.
func (e *Engine) storeSamples(ts []harnesses.Trajectory, hs []string, kind string) error {
	var recs [][]byte
	keptSeen := map[string]bool{}
	for i, t := range ts {
		kept := t.Reward >= e.Cfg.Threshold
		why := string(t.Failure)
		if kept {
			if keptSeen[t.TaskID] {
				continue
			}
			keptSeen[t.TaskID] = true
			why = "reward ≥ threshold"
		} else if why == "" {
			why = "low_reward"
		}
		rec, err := checkedJSON(fmt.Sprintf("the sample of task %s", t.TaskID), SampleRecord{Kind: kind, Step: e.st.Step, Iteration: e.st.Iteration, Round: e.st.Round,
			Kept: kept, Why: why, Harness: hs[i], Weights: e.st.Weights, Policy: e.fleetAdapter(), Trajectory: t})
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil
	}
	defer e.timeStore()()
	seq, err := e.env.Store.AppendSamples(e.RunID, recs...)
	if err != nil {
		return err
	}
	e.st.SamplesSeq = seq
	return nil
}

// scorer scores harness sources on tasks with the current weights, one
// rollout per task, and books the rollouts as search. Request keys name
// the weights, the pass and the task, never the harness: every harness
// scored under the same weights draws the same random numbers for the
// same task (paired scoring), so a candidate and the incumbent differ by
// what the harness does, not by sampling luck.
func (e *Engine) scorer() search.Scorer {
	return search.ScorerFunc(func(ctx context.Context, src string, tasks []data.Task, pass int) ([]search.Outcome, error) {
		h, err := e.load(src)
		if err != nil {
			return nil, err
		}
		if outs, ok := e.reusedDraws(h.Hash, tasks, pass); ok {
			return outs, nil
		}
		stop := e.timeInto(&e.times.Sampling)
		ts, err := harnesses.Run(ctx, h, e.env.Domain, tasks, e.pol, e.runOpts(scoreKeyPrefix(e.st.Weights, pass), 1))
		stop()
		if err != nil {
			return nil, err
		}
		if err := e.finiteRollouts(ts, "harness "+ShortHash(h.Hash)+"'s scoring rollouts"); err != nil {
			return nil, err
		}
		e.st.Ledger.Search += len(ts)
		e.st.Ledger.SearchCalls += modelCalls(ts)
		e.st.Ledger.SearchTokens += completionTokens(ts)
		if h.Hash == e.st.Archive.Incumbent {
			e.noteFailures(ts)
		}
		return outcomes(tasks, ts), nil
	})
}

// scoreKeyPrefix is the request-key prefix of harness scoring: weights
// and pass, no harness (see scorer).
func scoreKeyPrefix(weights string, pass int) string {
	return fmt.Sprintf("s/%s/p%d/", ShortHash(weights), pass)
}

// outcomes lists the trajectories' outcomes in task order (one rollout
// per task).
func outcomes(tasks []data.Task, ts []harnesses.Trajectory) []search.Outcome {
	byTask := map[string]search.Outcome{}
	for _, t := range ts {
		byTask[t.TaskID] = search.Outcome{Reward: t.Reward, Failure: string(t.Failure), Calls: t.ModelCalls()}
	}
	out := make([]search.Outcome, len(tasks))
	for i, t := range tasks {
		out[i] = byTask[t.ID]
	}
	return out
}

// samplesOf reads SAMPLES of a harness source for the searcher's prices,
// without storing the harness: most sources it prices are proposals that
// are never scored.
func (e *Engine) samplesOf(src string) (int, error) {
	if h, ok := e.harnessCache[harnesses.Hash(src)]; ok {
		return h.Samples, nil
	}
	h, err := harnesses.LoadDrawn("candidate.star", src, harnesses.EnvOf(e.env.Domain))
	if err != nil {
		return 0, err
	}
	return h.Samples, nil
}

// harnessIteration runs one Phase B iteration; the first of a phase scores
// the incoming harness under the new weights (the reference counts it as an
// iteration).
func (e *Engine) harnessIteration(ctx context.Context) (bool, error) {
	a := e.st.Archive
	// The searcher begins no score the budget or the phase's allowance
	// cannot pay for and proposes no more candidates than they can score,
	// so conditions compared at equal budget stay close to it.
	s := &search.Searcher{Proposer: e.proposer(), Scorer: e.scorer(), M: e.Cfg.Candidates, Admit: e.admit, Samples: e.samplesOf, Check: e.checkCandidate}
	if _, bounded := e.ledgerLeft(PhaseHarness); bounded {
		s.Left = func() int { left, _ := e.ledgerLeft(PhaseHarness); return left }
	}
	allowance := e.harnessAllowance()
	if allowance > 0 {
		s.PhaseLeft = func() int { return allowance - (e.st.Ledger.Budgeted() - e.st.PhaseStart) }
	}
	e.st.Iteration++
	var r search.IterationResult
	var err error
	switch {
	case e.Cfg.Condition == "fast-slow":
		r, err = e.paretoRound(ctx, s)
	case a.Weights != e.st.Weights || !a.Entries[a.Incumbent].Complete:
		// New weights make every score stale: the incoming harness, the
		// previous top 3 and Pareto front are measured first (the
		// reference counts that as an iteration). Under unchanged weights
		// (harness-only, staged) the archive's scores stand and the
		// search simply continues.
		r, err = s.Restart(ctx, a, e.st.Weights, e.val, e.st.Iteration)
	default:
		rng := rand.New(rand.NewPCG(e.Cfg.Seed, 0x5ea_0000+uint64(e.st.Iteration)))
		r, err = s.Iterate(ctx, a, e.val, rng, e.st.Iteration)
	}
	if err != nil {
		return false, err
	}
	e.st.PhaseSteps++
	// Overfitting alarm: every newly accepted harness is also scored on the
	// audit split, which selection never sees.
	if inc := a.Entries[a.Incumbent]; (r.Changed || !inc.HasAudit) && len(e.audit) > 0 {
		rep, err := e.evalSplit(ctx, data.SplitAudit, e.audit, a.Incumbent, 1)
		if err != nil {
			return false, err
		}
		inc.Audit, inc.HasAudit = rep.MeanAtK, true
	}
	end := e.st.schedule().HarnessIteration(r.BestScore)
	switch {
	case r.Starved == search.StarvedBudget:
		e.st.Starved, end = true, true
	case r.Starved == search.StarvedPhase || (s.PhaseLeft != nil && s.PhaseLeft() <= 0):
		end = true
	case len(r.Candidates) == 0 && r.Rollouts == 0:
		e.st.Exhausted, end = e.st.Weights, true
	}
	d := HarnessIterationData{Result: r, Patience: e.st.schedule().Patience(), Frozen: []string{}}
	if space, err := harnesses.SpaceOf(a.Entries[a.Incumbent].Source); err == nil {
		for _, dim := range space {
			d.Knobs = append(d.Knobs, dim.Knob)
		}
	}
	for k := range a.Frozen {
		d.Frozen = append(d.Frozen, k)
	}
	sort.Strings(d.Frozen)
	for i, ent := range a.Leaderboard() {
		if i == 20 {
			break
		}
		lo, hi := ent.CI95()
		d.Board = append(d.Board, BoardRow{Hash: ent.Hash, Parent: ent.Parent, Mechanism: ent.Mechanism, Score: ent.Score,
			CILo: lo, CIHi: hi, Rollouts: ent.Rollouts, Iteration: ent.Iteration, Status: string(ent.Status), Complete: ent.Complete,
			Calls: ent.Calls, Gain: ent.Gain, GainLo: ent.GainLo, GainHi: ent.GainHi, Against: ent.Against, HasGain: ent.HasGain,
			NullLift: ent.NullLift, HasNull: ent.HasNull, NullRefused: ent.NullRefused, Invalid: ent.Invalid})
	}
	return end, e.emit(EvHarnessIteration, mustJSON(d))
}

// evalSplit runs the incumbent on tasks with k samples each and returns
// the report; the rollouts are booked as evaluation.
func (e *Engine) evalSplit(ctx context.Context, name string, tasks []data.Task, hash string, k int) (eval.Report, error) {
	h, err := e.harness(hash)
	if err != nil {
		return eval.Report{}, err
	}
	prefix := fmt.Sprintf("%s/r%d/%s/", name, e.st.Round, e.st.Phase)
	stop := e.timeInto(&e.times.Evaluation)
	ts, err := harnesses.Run(ctx, h, e.env.Domain, tasks, e.pol, e.runOpts(prefix, k))
	stop()
	if err != nil {
		return eval.Report{}, err
	}
	return e.bookEval(name, hash, ts)
}

// evalTest measures test mean@CurveK of the current weights under harness
// hash, for learning curves only.
func (e *Engine) evalTest(ctx context.Context, hash string) (float64, error) {
	rep, err := e.testReport(ctx, e.st.Weights, hash, e.Cfg.curveK())
	return rep.MeanAtK, err
}

// testReport measures test mean@k of weights (the loaded ones, whose blob
// is weights) under harness hash, once per pair and k (State.TestSeen).
func (e *Engine) testReport(ctx context.Context, weights, hash string, k int) (eval.Report, error) {
	key := testKey(weights, hash, k, e.Cfg.TestK)
	if rep, ok := e.st.TestSeen[key]; ok {
		return rep, nil
	}
	calls, episodes := e.st.Ledger.EvalCalls, e.st.Ledger.Eval
	rep, err := e.evalSplit(ctx, data.SplitTest, e.test, hash, k)
	if err != nil {
		return rep, err
	}
	if e.st.TestCalls == nil {
		e.st.TestCalls = map[string]float64{}
	}
	e.st.TestCalls[key] = float64(e.st.Ledger.EvalCalls-calls) / float64(max(1, e.st.Ledger.Eval-episodes))
	if k == e.Cfg.TestK {
		// The score a report draws intervals from: per test task, in the
		// split's order, so runs on the same tasks pair task by task.
		per := make([]float64, len(e.test))
		for i, t := range e.test {
			per[i] = e.lastPerTask[t.ID]
		}
		if e.st.TestTasks == nil {
			e.st.TestTasks = map[string][]float64{}
		}
		e.st.TestTasks[key] = per
	}
	if e.Cfg.CurveTest {
		if e.st.TestSeen == nil {
			e.st.TestSeen = map[string]eval.Report{}
		}
		e.st.TestSeen[key] = rep
	}
	return rep, nil
}

// testKey is State.TestSeen's key: "WEIGHTS|HARNESS", with "|k" when k is
// not TestK (runs stored before CurveK keep their keys).
func testKey(weights, hash string, k, testK int) string {
	if k == testK {
		return weights + "|" + hash
	}
	return fmt.Sprintf("%s|%s|%d", weights, hash, k)
}

// evalVal measures the incumbent's val mean@ValK and pass@ValK under the
// current weights, once per pair (State.ValSeen).
func (e *Engine) evalVal(ctx context.Context) (mean, pass float64, err error) {
	key := e.st.Weights + "|" + e.st.Archive.Incumbent
	if v, ok := e.st.ValSeen[key]; ok {
		return v.Mean, v.Pass, nil
	}
	var rep eval.Report
	if e.pairedVal() {
		rep, err = e.evalValPaired(ctx)
	} else {
		rep, err = e.evalSplit(ctx, data.SplitVal, e.val, e.st.Archive.Incumbent, e.Cfg.ValK)
	}
	if err != nil {
		return 0, 0, err
	}
	if e.st.ValSeen == nil {
		e.st.ValSeen = map[string]ValMeasure{}
	}
	e.st.ValSeen[key] = ValMeasure{Mean: rep.MeanAtK, Pass: rep.PassAtK}
	return rep.MeanAtK, rep.PassAtK, nil
}

// harnessAllowance is the model calls the running harness phase may
// spend (0: bounded by I or the patience alone): under HarnessPasses the
// allowance fixed when the phase began, else HarnessCalls.
func (e *Engine) harnessAllowance() int {
	if e.Cfg.Condition == "" && e.Cfg.HarnessPasses > 0 {
		return e.st.PhaseAllowance
	}
	return e.Cfg.phaseAllowance()
}

// passAllowance is HarnessPasses passes of the incumbent over the val
// tasks: at its last measured calls per rollout, or before it was ever
// scored at one call a sample (its SAMPLES a rollout); at least one call.
func (e *Engine) passAllowance() (int, error) {
	a := e.st.Archive
	inc, ok := a.Entries[a.Incumbent]
	if !ok {
		return 0, fmt.Errorf("engine: incumbent %s not in the archive", ShortHash(a.Incumbent))
	}
	pass := inc.PassCalls(len(e.val))
	if pass == 0 {
		samples, err := e.samplesOf(inc.Source)
		if err != nil {
			return 0, err
		}
		pass = len(e.val) * max(1, samples)
	}
	return max(1, int(math.Ceil(e.Cfg.HarnessPasses*float64(pass)))), nil
}

// beginPhase starts phase p under the schedule.
func (e *Engine) beginPhase(p Phase) error {
	e.st.Phase, e.st.PhaseSteps, e.st.Force = p, 0, false
	e.st.PhaseStart, e.st.PhaseEpisodes = e.st.Ledger.Budgeted(), e.st.Ledger.Episodes()
	e.st.PhaseAllowance = 0
	if p == PhaseHarness && e.Cfg.Condition == "" && e.Cfg.HarnessPasses > 0 {
		n, err := e.passAllowance()
		if err != nil {
			return err
		}
		e.st.PhaseAllowance = n
	}
	e.st.PhaseWeights = e.st.Weights
	e.st.Health = Health{}
	e.st.schedule().Begin(p)
	if err := e.prepareReference(); err != nil {
		return err
	}
	return e.emit(EvPhaseStarted, mustJSON(PhaseStartedData{Kind: p, Round: e.st.Round, Harness: e.st.Archive.Incumbent}))
}

// prepareReference loads the phase's starting weights as the operator's
// frozen reference: DPO's and GRPO's, and RSFT's when it has a KL penalty.
func (e *Engine) prepareReference() error {
	if (e.Cfg.Operator == "rsft" && e.Cfg.KL == 0) || e.st.PhaseWeights == "" {
		return nil
	}
	if e.ref == nil {
		// Under LoRA the reference shares the frozen weights and differs
		// in its adapters only.
		ref, err := e.model.WithAdapters()
		if e.Cfg.LoRA == nil {
			ref, err = model.New(e.model.Config, e.model.Backend(), 0)
		}
		if err != nil {
			return err
		}
		e.ref = ref
	}
	b, err := e.env.Store.GetBlob(e.st.PhaseWeights)
	if err != nil {
		return err
	}
	if err := e.ref.SetTrainableValues(bytesf32(b)); err != nil {
		return err
	}
	switch op := e.op.(type) {
	case *weights.DPO:
		op.Ref = e.ref
	case *weights.GRPO:
		op.Ref = e.ref
	case *weights.RSFT:
		op.Ref = e.ref
	}
	return nil
}

// endPhase measures val, records the phase, keeps a checkpoint, and either
// starts the next phase or finishes the run: when the next phase's ledger
// is spent the other kind runs while its own lasts (afterSpent).
func (e *Engine) endPhase(ctx context.Context) error {
	a := e.st.Archive
	val, pass, err := e.evalVal(ctx)
	if err != nil {
		return err
	}
	rec := PhaseRecord{Kind: e.st.Phase, Round: e.st.Round, Rollouts: e.st.Ledger.Episodes() - e.st.PhaseEpisodes,
		Calls: e.st.Ledger.Budgeted() - e.st.PhaseStart, Steps: e.st.PhaseSteps,
		ValBefore: e.st.ValBefore, ValAfter: val, ValPassBefore: e.st.ValPassBefore, ValPassAfter: pass,
		Harness: a.Incumbent, Weights: e.st.Weights, Forced: e.st.Force, Start: e.st.PhaseStart, Allowance: e.st.PhaseAllowance}
	rec.Entropy, rec.KeptFraction = e.st.Health.means()
	// What follows the boundary is known now: nothing below spends a
	// ledger or changes the archive.
	next, round, last := e.afterBoundary()
	if e.Cfg.curvePoint(len(e.st.Phases)+1, last) {
		t, err := e.evalTest(ctx, a.Incumbent)
		if err != nil {
			return err
		}
		rec.TestAfter = &t
	}
	if inc := a.Entries[a.Incumbent]; e.st.Phase == PhaseHarness && inc.HasAudit {
		gap := inc.Score - inc.Audit
		rec.AuditGap = &gap
	}
	e.st.Phases = append(e.st.Phases, rec)
	id, err := e.keepCheckpoint(rec)
	if err != nil {
		return err
	}
	if e.st.BestCkpt == "" || val > e.st.BestVal {
		e.st.BestVal, e.st.BestCkpt = val, id
	}
	if err := e.emit(EvPhaseEnded, mustJSON(rec)); err != nil {
		return err
	}
	e.st.ValBefore, e.st.ValPassBefore = val, pass
	if last {
		return e.finish(ctx)
	}
	e.st.Round = round
	return e.beginPhase(next)
}

// afterBoundary is what follows the phase that is ending: the next phase
// and its round, or last when the run finishes here (when the next
// phase's ledger is spent the other kind runs while its own lasts:
// afterSpent).
func (e *Engine) afterBoundary() (next Phase, round int, last bool) {
	next, newRound := e.nextPhase()
	next, switched, ok := e.afterSpent(next)
	round = e.st.Round
	if newRound || switched {
		round++
	}
	exhausted := next == PhaseHarness && e.st.Exhausted != "" && e.st.Exhausted == e.st.Weights
	return next, round, !ok || exhausted || (e.Cfg.MaxRounds > 0 && round > e.Cfg.MaxRounds)
}

// CheckpointManifest is a kept checkpoint's manifest.
type CheckpointManifest struct {
	Run       string       `json:"run"`
	Round     int          `json:"round"`
	Phase     Phase        `json:"phase"`
	Step      int          `json:"step"`
	Iteration int          `json:"iteration"`
	Weights   string       `json:"weights"`
	Optimizer string       `json:"optimizer"`
	Harness   string       `json:"harness"`
	Config    model.Config `json:"config"`
	// Tokenizer is the blob of the model's tokenizer.json ("" for the
	// byte tokenizer), as Config.Tokenizer.
	Tokenizer string `json:"tokenizer,omitempty"`
	// LoRA is the run's adapter configuration when Weights holds LoRA
	// adapters over the frozen weights in blob Base.
	LoRA    *model.LoRAConfig `json:"lora,omitempty"`
	Base    string            `json:"base,omitempty"`
	Metrics map[string]any    `json:"metrics"`
}

func (e *Engine) keepCheckpoint(rec PhaseRecord) (string, error) {
	id := fmt.Sprintf("%s/%02d-%s", e.RunID, rec.Round, rec.Kind)
	man := CheckpointManifest{Run: e.RunID, Round: rec.Round, Phase: rec.Kind, Step: e.st.Step, Iteration: e.st.Iteration,
		Weights: e.st.Weights, Optimizer: e.st.Optimizer, Harness: rec.Harness, Config: e.model.Config, Tokenizer: e.Cfg.Tokenizer,
		LoRA: e.Cfg.LoRA, Base: e.Cfg.Base, Metrics: map[string]any{"val_mean_at_k": rec.ValAfter, "val_k": e.Cfg.ValK}}
	if err := e.persist(); err != nil {
		return "", err
	}
	man.Optimizer = e.st.Optimizer // persist names the stored state
	stop := e.timeStore()
	blobs := []string{e.st.Weights, e.st.Optimizer}
	for _, h := range []string{man.Tokenizer, man.Base} {
		if h != "" {
			blobs = append(blobs, h)
		}
	}
	err := e.env.Store.PutCheckpoint(store.Checkpoint{ID: id, Manifest: mustJSON(man), Blobs: blobs})
	stop()
	if err != nil {
		return "", err
	}
	if e.st.Kept == nil {
		e.st.Kept = map[string]bool{}
	}
	e.st.Kept[e.st.Weights], e.st.Kept[e.st.Optimizer] = true, true
	return id, e.emit(EvCheckpoint, mustJSON(CheckpointData{ID: id, Weights: e.st.Weights, Harness: rec.Harness}))
}

// finish evaluates the best-val checkpoint on test (k = TestK) and, unless
// the run measures learning curves, val (k = 8) — never selecting on test —
// and records the summary.
func (e *Engine) finish(ctx context.Context) error {
	c, err := e.env.Store.GetCheckpoint(e.st.BestCkpt)
	if err != nil {
		return err
	}
	var man CheckpointManifest
	if err := json.Unmarshal(c.Manifest, &man); err != nil {
		return fmt.Errorf("engine: checkpoint %s: %w", c.ID, err)
	}
	final := e.st.Weights
	if err := e.loadWeights(man.Weights); err != nil {
		return err
	}
	test, err := e.testReport(ctx, man.Weights, man.Harness, e.Cfg.TestK)
	if err != nil {
		return err
	}
	var val8 *float64
	if !e.Cfg.CurveTest {
		rep, err := e.evalSplit(ctx, data.SplitVal, e.val, man.Harness, 8)
		if err != nil {
			return err
		}
		val8 = &rep.MeanAtK
	}
	if err := e.loadWeights(final); err != nil {
		return err
	}
	// Rounds counts the rounds begun (the last may have been cut short by
	// the budget).
	l := e.st.Ledger
	sum := &Summary{RunID: e.RunID, Domain: e.Cfg.Domain, Schedule: e.Cfg.Schedule, Condition: e.Cfg.Condition, Rounds: e.st.Round, TestStart: e.st.TestStart,
		Rollouts: l.Episodes(), EvalRollouts: l.Eval, ModelCalls: l.Budgeted(), EvalCalls: l.EvalCalls,
		TrainCalls: l.TrainCalls, SearchCalls: l.SearchCalls, TestCallsPerEpisode: e.st.TestCalls[testKey(man.Weights, man.Harness, e.Cfg.TestK, e.Cfg.TestK)],
		StartCallsPerEpisode: e.st.StartCalls,
		TestPerTask:          e.st.TestTasks[testKey(man.Weights, man.Harness, e.Cfg.TestK, e.Cfg.TestK)],
		KeptPerCall:          float64(l.TrainKept+l.TrainExtra) / float64(max(1, l.TrainCalls)),
		KeptPerCallChosen:    float64(l.TrainKept) / float64(max(1, l.TrainCalls)),
		Phases:               e.st.Phases,
		BestValMean:          e.st.BestVal, BestValMean8: val8, TestMean8: test.MeanAtK, TestPass8: test.PassAtK,
		TestCI95: test.CI95, TestK: e.Cfg.TestK, FinalHarness: e.st.Archive.Incumbent, FinalWeights: final, BestCkpt: e.st.BestCkpt,
		Entropy: runEntropy(e.st.Phases)}
	e.st.Summary, e.st.Done = sum, true
	return e.emit(EvRunFinished, mustJSON(sum))
}

// replaySamples returns the remembered kept samples of the last Replay
// steps that the current harness h still reads the same way, and how many
// it dropped.
func (e *Engine) replaySamples(h *harnesses.Harness) ([]weights.Sample, int, error) {
	var out []weights.Sample
	var keep []replayed
	dropped := 0
	for _, r := range e.st.Replay {
		if r.Step < e.st.Step-e.Cfg.Replay {
			continue // too old: forgotten
		}
		if r.Harness != h.Hash {
			act, err := h.ParseAction(r.Text)
			if err != nil || act == nil || act.Kind != r.Action.Kind || act.Text != r.Action.Text {
				dropped++
				continue
			}
		}
		keep = append(keep, r)
		out = append(out, r.Sample)
	}
	e.st.Replay = keep
	return out, dropped, nil
}

// remember adds this step's kept samples to the replay buffer.
func (e *Engine) remember(ts []harnesses.Trajectory, samples []weights.Sample) {
	for i, t := range ts {
		if t.Reward < e.Cfg.Threshold {
			continue
		}
		r := replayed{Sample: samples[i], Step: e.st.Step, Harness: e.st.Archive.Incumbent, Weights: e.st.Weights}
		for _, c := range t.Calls {
			if c.Action != nil && (c.Outcome == "answer" || c.Outcome == "move") {
				r.Text, r.Action = c.Text, *c.Action
			}
		}
		if r.Action.Kind != "" {
			e.st.Replay = append(e.st.Replay, r)
		}
	}
}

// proposer builds the configured Phase B proposer.
func (e *Engine) proposer() search.Proposer {
	switch e.Cfg.Proposer {
	case "grid":
		return &search.Grid{Base: e.st.Archive.Entries[e.st.Archive.Incumbent].Source, Knobs: e.Cfg.GridKnobs}
	case "llm":
		return &search.LLM{URL: e.Cfg.ProposerURL, Model: e.Cfg.ProposerModel, Env: harnesses.EnvOf(e.env.Domain),
			Contract: harnessContract, Traces: e.traces}
	case "mutation":
		return search.Mutation{}
	}
	return search.Fragment{}
}

// harnessContract is what the LLM proposer is told about harnesses.
const harnessContract = `A harness defines SYSTEM_PROMPT, USER_PROMPT (with {observation}), FORMAT_RETRY_BUDGET,
INVALID_RETRY_BUDGET, MAX_TURNS, TOOLS, CONTEXT_TOKENS, format_observation(obs, state),
parse_action(text) -> {"kind": "answer"|"move"|"tool", "text"|"tool"/"args": ...} or None,
is_valid_action(obs, action), and optionally format_tool_result(name, result, state),
next_step(state) (state["last_completion"] holds the model's last reply), compact_history(messages, state),
SAMPLES (1..16 completions per model call, each one paid for) and aggregate(candidates, state), which must
return one of its candidates (dicts: index, action, valid, logprob, tokens, text, finish; built-ins
vote.plurality, vote.plurality_valid, vote.logprob_weighted). Modules: re, json, math, vote; no load, no I/O.
Budgets: retries 0..10, turns up to twice the domain default. The answer a harness submits must
occur in the model's completion: a harness may extract, never invent. Keep SEARCH_SPACE valid.`

// noteFailures keeps a few failed rollouts of the incumbent as short
// traces for the LLM proposer.
func (e *Engine) noteFailures(ts []harnesses.Trajectory) {
	e.traces = e.traces[:0]
	for _, t := range ts {
		if t.Failure == "" || len(t.Calls) == 0 || len(e.traces) == 8 {
			continue
		}
		last := t.Calls[len(t.Calls)-1].Text
		if len(last) > 400 {
			last = last[:400] + "…"
		}
		e.traces = append(e.traces, fmt.Sprintf("task %s failed (%s); last completion:\n%s", t.TaskID, t.Failure, last))
	}
}

// runEntropy is the mean step entropy over every weight step of phases.
func runEntropy(phases []PhaseRecord) *float64 {
	var sum float64
	n := 0
	for _, p := range phases {
		if p.Entropy != nil && p.Steps > 0 {
			sum += *p.Entropy * float64(p.Steps)
			n += p.Steps
		}
	}
	if n == 0 {
		return nil
	}
	m := sum / float64(n)
	return &m
}
