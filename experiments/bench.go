// Package experiments runs the comparisons a person needs before adopting
// WHALE on a task: the same rollout budget spent by weight-only training,
// harness-only search, a staged pass, Fast-Slow Training and WHALE under
// a fixed and an adaptive schedule. Every condition × domain × seed is an
// ordinary run in the store, so a bench resumes after an interruption and
// every run can be opened in the workbench. It never draws charts
// (experiments/report does) and never selects on the test split.
package experiments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"whale/core/bundle"
	"whale/core/engine"
	"whale/core/policy"
	"whale/core/store"
	"whale/data"
	"whale/experiments/report"
	"whale/kernels"
)

// Plan is what a bench runs.
type Plan struct {
	Domains    []string
	Conditions []string // report.Conditions if empty
	Seeds      int
	Preset     string
	// Budget is the training + harness-scoring rollouts of every run.
	Budget int
	// E and I are WHALE-fixed's point; 0 takes the preset's (small: 0.2,
	// 2, one of the reference's ablations; its main setting is 0.6, 6).
	E float64
	I int
	// CurveK is the k of the learning curves' test measurements at every
	// phase boundary (engine.Config.CurveK; 0: the preset's TestK).
	CurveK int
	// FastSlowE sizes fast-slow's weight steps per cycle ("a few").
	FastSlowE float64
	// DataSeed seeds the domains' splits (the base model's).
	DataSeed uint64
	// Prefix starts every run id ("bench", "sweep").
	Prefix string
}

// Job is one run of a plan.
type Job struct {
	ID        string
	Condition string
	Domain    string
	Seed      uint64
	Config    engine.Config
}

// Jobs lists the plan's runs in report order: domain, condition, seed.
func (p Plan) Jobs() ([]Job, error) {
	conds := p.Conditions
	if len(conds) == 0 {
		conds = report.Conditions
	}
	if p.Seeds < 1 {
		return nil, fmt.Errorf("experiments: seeds = %d, want ≥ 1", p.Seeds)
	}
	if p.Budget < 1 {
		return nil, fmt.Errorf("experiments: budget = %d rollouts, want ≥ 1 (every condition gets the same budget)", p.Budget)
	}
	var jobs []Job
	for _, d := range p.Domains {
		for _, c := range conds {
			for s := 1; s <= p.Seeds; s++ {
				cfg, err := p.config(c, d, uint64(s))
				if err != nil {
					return nil, err
				}
				id := fmt.Sprintf("%s-%s-%s-b%d-s%d", p.Prefix, d, c, p.Budget, s)
				jobs = append(jobs, Job{ID: id, Condition: c, Domain: d, Seed: uint64(s), Config: cfg})
			}
		}
	}
	return jobs, nil
}

// fixedPoint is WHALE-fixed's (E, I): the plan's, where set, over the
// preset's in pre.
func (p Plan) fixedPoint(pre engine.Config) (float64, int) {
	e, i := pre.E, pre.I
	if p.E > 0 {
		e = p.E
	}
	if p.I > 0 {
		i = p.I
	}
	return e, i
}

// FixedPoint is WHALE-fixed's (E, I) under the plan, for reports.
func (p Plan) FixedPoint() (float64, int, error) {
	pre, err := engine.Preset(p.Preset, "math")
	if err != nil {
		return 0, 0, err
	}
	e, i := p.fixedPoint(pre)
	return e, i, nil
}

// config is the engine configuration of one condition.
func (p Plan) config(cond, domain string, seed uint64) (engine.Config, error) {
	cfg, err := engine.Preset(p.Preset, domain)
	if err != nil {
		return cfg, err
	}
	cfg.Seed, cfg.DataSeed, cfg.Budget, cfg.MaxRounds, cfg.CurveTest, cfg.CurveK = seed, p.DataSeed, p.Budget, 0, true, p.CurveK
	switch cond {
	case "weight-only", "harness-only", "staged":
		// The baselines keep their own phase lengths: the harness-phase
		// allowance is WHALE's alone (engine.Config.HarnessCalls).
		cfg.Condition, cfg.HarnessCalls = cond, 0
	case "fast-slow":
		cfg.Condition, cfg.E, cfg.I, cfg.HarnessCalls = cond, p.FastSlowE, 1, 0
	case "whale-fixed":
		cfg.E, cfg.I = p.fixedPoint(cfg)
	case "whale-adaptive":
		cfg.Schedule = "adaptive"
	default:
		return cfg, fmt.Errorf("experiments: unknown condition %q (have %v)", cond, report.Conditions)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("experiments: condition %s on %s: %w", cond, domain, err)
	}
	return cfg, nil
}

// Env opens what runs need. Model must return fresh starting weights (with
// their tokenizer) on every call (a run trains the model it is given).
type Env struct {
	Store  *store.DB
	Domain func(name string) (data.Domain, error)
	Model  func() (*bundle.Bundle, error)
	// Policy, if set, samples rollouts instead of the model (tests use
	// scripted policies).
	Policy func(d data.Domain) policy.Policy
	// Workers is how many runs go at once (≤ 1: one at a time). On a
	// small CPU model, two single-threaded runs beat one two-threaded run
	// (measured: 1,850 + 1,850 tokens/s of training against 2,300).
	Workers int
	// Record, if set, keeps every finished run beside the report and
	// answers the jobs the store has never seen.
	Record *Record
	// Build names this whale in the record's rows (its VCS revision).
	Build string
	// Progress, if set, hears one line per started, resumed or finished run.
	Progress func(line string)
	// Live, if set, is handed each engine before it runs (to watch it:
	// subscribe, serve it to other processes); the func it returns hears
	// how the run ended (nil error: finished).
	Live func(j Job, eng *engine.Engine) func(error)
}

// record keeps a finished run in the plan's record, if it has one.
func (env Env) record(r report.Run, cfg json.RawMessage) error {
	if env.Record == nil || !r.Done {
		return nil
	}
	return env.Record.Put(RecordRow{Run: r, Config: cfg, Kernels: kernels.KernelName(), Build: env.Build, Version: RunsVersion(r.Condition)})
}

// Run runs (or resumes, or just reads) every job and returns the report
// rows in job order. Env.Workers jobs run at once (each run is
// deterministic on its own, so the results do not depend on it). A stored
// run under a job's id must have been started with the same configuration:
// a bench never silently mixes two plans.
func Run(ctx context.Context, env Env, jobs []Job) ([]report.Run, error) {
	say := env.Progress
	if say == nil {
		say = func(string) {}
	}
	var mu sync.Mutex
	locked := func(line string) { mu.Lock(); defer mu.Unlock(); say(line) }
	out := make([]report.Run, len(jobs))
	errs := make([]error, len(jobs))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(1, env.Workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if errs[i] = ctx.Err(); errs[i] != nil {
					continue // stopping: never start a run only to cancel it
				}
				out[i], errs[i] = runJob(ctx, env, jobs[i], fmt.Sprintf("[%d/%d]", i+1, len(jobs)), locked)
				if errs[i] != nil {
					cancel()
				}
			}
		}()
	}
	for i := range jobs {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var done []report.Run
	for i := range jobs {
		if errs[i] != nil && !errors.Is(errs[i], context.Canceled) {
			return done, errs[i]
		}
		if errs[i] == nil && out[i].RunID != "" {
			done = append(done, out[i])
		}
	}
	if err := ctx.Err(); err != nil && len(done) < len(jobs) {
		return done, err
	}
	return done, nil
}

// runJob runs, resumes or reads one job.
func runJob(ctx context.Context, env Env, j Job, tag string, say func(string)) (report.Run, error) {
	r, cfg, err := collect(env.Store, j)
	fresh := errors.Is(err, store.ErrNotFound)
	switch {
	case err == nil && r.Done:
		say(fmt.Sprintf("%s %s: finished earlier, best test mean@8 %.3f", tag, j.ID, r.BestTestMean8))
		return r, env.record(r, cfg)
	case err != nil && !fresh:
		return r, err
	}
	if fresh && env.Record != nil {
		rr, ok, err := env.Record.read(j)
		if err != nil {
			return rr, err
		}
		if ok {
			say(fmt.Sprintf("%s %s: finished earlier (read from %s), best test mean@8 %.3f", tag, j.ID, env.Record.Path(), rr.BestTestMean8))
			return rr, nil
		}
	}
	dom, err := env.Domain(j.Domain)
	if err != nil {
		return r, fmt.Errorf("experiments: %s: %w", j.ID, err)
	}
	m, err := env.Model()
	if err != nil {
		return r, err
	}
	eenv := engine.BundleEnv(m, dom, env.Store)
	if env.Policy != nil {
		eenv.Policy = env.Policy(dom)
	}
	var eng *engine.Engine
	if fresh {
		say(fmt.Sprintf("%s %s: starting", tag, j.ID))
		eng, err = engine.New(j.Config, eenv, j.ID)
		if err == nil {
			err = env.Store.SetRunLabel(j.ID, labelRunsVersion, strconv.Itoa(RunsVersion(j.Condition)))
		}
	} else {
		say(fmt.Sprintf("%s %s: resuming", tag, j.ID))
		eng, err = engine.Resume(eenv, kernels.NewCPU(), j.ID)
	}
	if err != nil {
		return r, fmt.Errorf("experiments: %s: %w", j.ID, err)
	}
	ended := func(error) {}
	if env.Live != nil {
		ended = env.Live(j, eng)
	}
	sum, err := eng.Run(ctx)
	ended(err)
	if err != nil {
		return r, fmt.Errorf("experiments: %s: %w", j.ID, err)
	}
	r, cfg, err = collect(env.Store, j)
	if err == nil {
		err = env.record(r, cfg)
	}
	if err == nil {
		compute := r.Compute.Round(time.Second).String() + " of compute"
		if r.Compute == 0 {
			compute = "compute time not recorded (run created before whale kept it)"
		}
		say(fmt.Sprintf("%s %s: best test mean@8 %.3f after %d rollouts (%d phases), %s", tag, j.ID,
			sum.TestMean8, sum.Rollouts, len(sum.Phases), compute))
	}
	return r, err
}

// labelRunsVersion is the store label (store.Run.Labels) under which a
// bench run keeps the RunsVersion of the code that started it.
const labelRunsVersion = "runs_version"

// Collect reads a job's run from the store as a report row. It wraps
// store.ErrNotFound when the run was never started; a run stored under the
// job's id with another configuration is an error.
func Collect(db *store.DB, j Job) (report.Run, error) {
	r, _, err := collect(db, j)
	return r, err
}

// collect is Collect, also returning the run's stored configuration.
func collect(db *store.DB, j Job) (report.Run, json.RawMessage, error) {
	sr, err := db.GetRun(j.ID)
	if err != nil {
		return report.Run{}, nil, err
	}
	if err := j.ranAs(sr.Config); err != nil {
		return report.Run{}, nil, err
	}
	// A run the store holds from code that computed its condition
	// otherwise must not stand for this code's (runs stored before the
	// bench labelled them carry no version and are taken as they are).
	if v, ok := sr.Labels[labelRunsVersion]; ok && v != strconv.Itoa(RunsVersion(j.Condition)) {
		return report.Run{}, nil, fmt.Errorf("experiments: run %s in %s was made by code that computes %s as version %s, and this whale computes it as version %d: move %s aside or use another --db to run it again (finished runs stay in the record)",
			j.ID, db.Path(), j.Condition, v, RunsVersion(j.Condition), db.Path())
	}
	r, err := row(db, j, sr)
	return r, sr.Config, err
}

// ranAs checks that a run stored (or recorded) with configuration stored is
// this job's: a bench never silently mixes two plans.
func (j Job) ranAs(stored []byte) error {
	var cfg engine.Config
	if err := json.Unmarshal(stored, &cfg); err != nil {
		return fmt.Errorf("experiments: run %s: stored config: %w", j.ID, err)
	}
	want := j.Config
	// set by the engine from the starting model and its tokenizer
	want.Model, want.Tokenizer, want.Generation = cfg.Model, cfg.Tokenizer, cfg.Generation
	a, _ := json.Marshal(cfg)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		return fmt.Errorf("experiments: run %s is stored with another configuration (%s), not this plan's (%s): use another --db or remove the run", j.ID, a, b)
	}
	return nil
}

// row is a stored run's report row.
func row(db *store.DB, j Job, sr store.Run) (report.Run, error) {
	r := report.Run{Condition: j.Condition, Domain: j.Domain, Seed: j.Seed, RunID: j.ID, Compute: sr.Compute}
	steered, err := Steered(db, j.ID)
	if err != nil {
		return r, err
	}
	r.Steered = steered
	if len(sr.Cursor) == 0 {
		return r, nil
	}
	var st engine.State
	if err := json.Unmarshal(sr.Cursor, &st); err != nil {
		return r, fmt.Errorf("experiments: run %s: resume point: %w", j.ID, err)
	}
	r.Phases = len(st.Phases)
	r.Rollouts, r.EvalRollouts = st.Ledger.Budgeted(), st.Ledger.EvalCalls
	r.Episodes, r.EvalEpisodes = st.Ledger.Episodes(), st.Ledger.Eval
	// pass@k ≥ mean@k, so a stored pass@k of 0 beside a mean above 0 is
	// a record from before whale measured it (with both 0 the spread is 0
	// either way).
	start := report.Point{Phase: "start", Round: 0}
	if len(st.Phases) > 0 {
		start.Val, start.ValPass, start.HasPass = st.Phases[0].ValBefore, st.Phases[0].ValPassBefore, st.Phases[0].ValPassBefore > 0 || st.Phases[0].ValBefore == 0
	}
	if st.TestStart != nil {
		start.Test, start.HasTest = *st.TestStart, true
	}
	r.Curve = append(r.Curve, start)
	for _, p := range st.Phases {
		pt := report.Point{Rollouts: p.Start + p.Calls, PhaseStart: p.Start, Phase: string(p.Kind), Round: p.Round, Val: p.ValAfter,
			ValPass: p.ValPassAfter, HasPass: p.ValPassAfter > 0 || p.ValAfter == 0}
		if p.TestAfter != nil {
			pt.Test, pt.HasTest = *p.TestAfter, true
		}
		r.Curve = append(r.Curve, pt)
	}
	if st.Done && st.Summary != nil {
		r.Done = true
		r.BestTestMean8, r.TestCI95, r.BestTestPass8 = st.Summary.TestMean8, st.Summary.TestCI95, st.Summary.TestPass8
		if e := st.Summary.Entropy; e != nil {
			r.Entropy, r.HasEntropy = *e, true
		}
	}
	return r, nil
}

// Steered counts the control commands applied to run that change what it
// computes: every one in the run's journal that the engine took (a
// refused or dropped one changed nothing) other than pause and resume.
func Steered(db *store.DB, run string) (int, error) {
	n := 0
	err := db.Control(run, func(seq uint64, b []byte) error {
		var j engine.JournaledCommand
		if err := json.Unmarshal(b, &j); err != nil {
			return fmt.Errorf("experiments: run %s: control journal entry %d: %w", run, seq, err)
		}
		if j.Error == "" && j.Kind != "pause" && j.Kind != "resume" {
			n++
		}
		return nil
	})
	return n, err
}
