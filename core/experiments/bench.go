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
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"whale/core/bundle"
	"whale/core/engine"
	"whale/core/experiments/report"
	"whale/core/policy"
	"whale/core/store"
	"whale/data"
	"whale/internal/procstat"
	"whale/kernels"
)

// Plan is what a bench runs.
type Plan struct {
	Domains    []string
	Conditions []string // report.Conditions if empty
	Seeds      int
	Preset     string
	// Budget is the training + harness-scoring model calls of every run
	// of a one-ledger plan (the sweep); unused when the plan has ledgers.
	Budget int
	// TrainCalls and SearchCalls are the paper's two ledgers: under the
	// paper accounting every condition that trains gets the weight ledger
	// and every condition that searches the search ledger; under the
	// equal-total accounting weight-only and harness-only get their sum
	// as one budget (the conditions that spend both ledgers already spend
	// that sum, so their paper runs stand for them there).
	TrainCalls, SearchCalls int
	// Accountings lists the accountings to run (report.Accountings if
	// empty); plans with ledgers only.
	Accountings []string
	// VoteK is vote-only's SAMPLES where no finished seed-matched
	// harness-only run gives one (0: DefaultVoteK).
	VoteK int
	// E and I are WHALE-fixed's point; 0 takes the preset's (small: 0.2,
	// 2, one of the reference's ablations; its main setting is 0.6, 6).
	E float64
	I int
	// CurveK is the k of the learning curves' test measurements at every
	// phase boundary (engine.Config.CurveK; 0: the preset's TestK).
	CurveK int
	// CurveDense measures test at every phase boundary; by default a run
	// measures it at the sparse set of engine.Config.CurveSparse (the
	// start, boundaries 1, 2, 4, 8, … and the last), which the curves
	// and the report's columns need, at a fraction of the cost.
	CurveDense bool
	// TestTasks is every run's test tasks (0: the preset's, small 256):
	// fewer make a bench cheaper and its intervals wider.
	TestTasks int
	// FastSlowE sizes fast-slow's weight steps per cycle ("a few").
	FastSlowE float64
	// DataSeed seeds the domains' splits (the base model's).
	DataSeed uint64
	// Prefix starts every run id ("bench", "sweep").
	Prefix string
	// Shard, if set, is the share of the jobs this process runs (shard.go).
	Shard *Shard
}

// DefaultVoteK is vote-only's SAMPLES when no seed-matched harness-only
// run gives one: the 4-sample vote the searches accepted most.
const DefaultVoteK = 4

// Job is one run of a plan.
type Job struct {
	ID        string
	Condition string
	Domain    string
	Seed      uint64
	Config    engine.Config
	// Accounting is the report's accounting of the job's row ("" for a
	// one-ledger plan's). Two jobs of one plan may share a run (ID): a
	// condition that spends both ledgers stands in both accountings.
	Accounting string
	// VoteK is a vote-only job's fixed k, used when its seed-matched
	// harness-only run is not finished (Run resolves the job first).
	VoteK int
	// prefix is the plan's run id prefix, for a vote-only job's id.
	prefix string
	// kFrom is, for a vote-only job of a plan without its seed-matched
	// harness-only job (--conditions vote-only after the harness-only runs
	// finished), the job the whole plan would hold: its k comes from that
	// run, read from the store or the record, as it would in the whole
	// plan.
	kFrom *Job
}

// ledgers reports whether the plan has the paper's two ledgers.
func (p Plan) ledgers() bool { return p.TrainCalls > 0 || p.SearchCalls > 0 }

// Jobs lists the plan's runs in report order: accounting, domain,
// condition, seed (the shard's share of them, with Shard).
func (p Plan) Jobs() ([]Job, error) {
	conds := p.Conditions
	if len(conds) == 0 {
		conds = report.Conditions
	}
	accs := []string{""}
	switch {
	case p.Seeds < 1:
		return nil, fmt.Errorf("experiments: seeds = %d, want ≥ 1", p.Seeds)
	case p.ledgers() && (p.TrainCalls < 1 || p.SearchCalls < 1):
		return nil, fmt.Errorf("experiments: ledgers of %d training and %d search calls, want ≥ 1 each", p.TrainCalls, p.SearchCalls)
	case !p.ledgers() && p.Budget < 1:
		return nil, fmt.Errorf("experiments: budget = %d rollouts, want ≥ 1 (every condition gets the same budget)", p.Budget)
	case p.ledgers():
		accs = p.Accountings
		if len(accs) == 0 {
			accs = report.Accountings
		}
		for _, a := range accs {
			if !slices.Contains(report.Accountings, a) {
				return nil, fmt.Errorf("experiments: unknown accounting %q (have %v)", a, report.Accountings)
			}
		}
	}
	var jobs []Job
	for _, acc := range accs {
		for _, d := range p.Domains {
			for _, c := range conds {
				for s := 1; s <= p.Seeds; s++ {
					j, err := p.job(c, d, uint64(s), acc)
					if err != nil {
						return nil, err
					}
					jobs = append(jobs, j)
				}
			}
		}
	}
	if !slices.Contains(conds, report.HarnessOnly) {
		for i, j := range jobs {
			if j.Condition != report.VoteOnly {
				continue
			}
			acc := ""
			if p.ledgers() {
				acc = report.AccountingPaper
			}
			h, err := p.job(report.HarnessOnly, j.Domain, j.Seed, acc)
			if err != nil {
				return nil, err
			}
			jobs[i].kFrom = &h
		}
	}
	if p.Shard != nil {
		jobs = p.Shard.Of(jobs)
	}
	return jobs, nil
}

// job is one condition × domain × seed under an accounting.
func (p Plan) job(c, d string, seed uint64, acc string) (Job, error) {
	run := acc
	oneSided := c == report.WeightOnly || c == report.HarnessOnly
	if acc == report.AccountingEqualTotal && !oneSided {
		run = report.AccountingPaper // the paper run spends the sum already
	}
	cfg, err := p.config(c, d, seed, run)
	if err != nil {
		return Job{}, err
	}
	var id string
	switch {
	case c == report.VoteOnly:
		id = voteID(p.Prefix, d, cfg.Harness, p.voteK(), seed)
	case run == "":
		id = fmt.Sprintf("%s-%s-%s-b%d-s%d", p.Prefix, d, c, p.Budget, seed)
	case run == report.AccountingEqualTotal:
		id = fmt.Sprintf("%s-%s-%s-b%d-s%d", p.Prefix, d, c, p.TrainCalls+p.SearchCalls, seed)
	default:
		id = fmt.Sprintf("%s-%s-%s-t%d+%d-s%d", p.Prefix, d, c, p.TrainCalls, p.SearchCalls, seed)
	}
	return Job{ID: id, Condition: c, Domain: d, Seed: seed, Config: cfg, Accounting: acc, VoteK: p.voteK(), prefix: p.Prefix}, nil
}

// voteID is a vote-only job's run id: its k is in it, so a k resolved
// otherwise later is another run, never a clash with the stored one.
func voteID(prefix, domain, _ string, k int, seed uint64) string {
	return fmt.Sprintf("%s-%s-%s-k%d-s%d", prefix, domain, report.VoteOnly, k, seed)
}

func (p Plan) voteK() int {
	if p.VoteK > 0 {
		return p.VoteK
	}
	return DefaultVoteK
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

// config is the engine configuration of one condition under an
// accounting ("" for a one-ledger plan).
func (p Plan) config(cond, domain string, seed uint64, acc string) (engine.Config, error) {
	cfg, err := engine.Preset(p.Preset, domain)
	if err != nil {
		return cfg, err
	}
	cfg.Seed, cfg.DataSeed, cfg.MaxRounds, cfg.CurveTest, cfg.CurveK = seed, p.DataSeed, 0, true, p.CurveK
	cfg.CurveSparse = !p.CurveDense
	if p.TestTasks > 0 {
		cfg.TestTasks = p.TestTasks
	}
	switch acc {
	case "":
		cfg.Budget, cfg.TrainCalls, cfg.SearchCalls = p.Budget, 0, 0
	case report.AccountingEqualTotal:
		cfg.Budget, cfg.TrainCalls, cfg.SearchCalls = p.TrainCalls+p.SearchCalls, 0, 0
	default:
		cfg.Budget, cfg.TrainCalls, cfg.SearchCalls = 0, p.TrainCalls, p.SearchCalls
	}
	switch cond {
	case report.VoteOnly:
		// h0 voting over k samples: nothing trained, nothing searched.
		cfg.Condition, cfg.HarnessCalls, cfg.HarnessPasses = engine.EvalOnly, 0, 0
		cfg.Budget, cfg.TrainCalls, cfg.SearchCalls = 0, 0, 0
		if cfg.Harness, err = engine.VoteHarness(domain, p.voteK()); err != nil {
			return cfg, err
		}
	case "weight-only", "harness-only", "staged":
		// The baselines keep their own phase lengths: the harness-phase
		// allowance is WHALE's alone (engine.Config.HarnessCalls and
		// HarnessPasses).
		cfg.Condition, cfg.HarnessCalls, cfg.HarnessPasses = cond, 0, 0
	case "fast-slow":
		cfg.Condition, cfg.E, cfg.I, cfg.HarnessCalls, cfg.HarnessPasses = cond, p.FastSlowE, 1, 0, 0
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
	// ModelID is the sha256 of the model every run starts from (Model's
	// bundle.SHA256), kept in the record's rows: a recorded run of another
	// model is refused, so a bench resumed after the embedded model
	// changed cannot mix two models.
	ModelID string
	// Progress, if set, hears one line per started, resumed or finished run.
	Progress func(line string)
	// Live, if set, is handed each engine before it runs (to watch it:
	// subscribe, serve it to other processes); the func it returns hears
	// how the run ended (nil error: finished).
	Live func(j Job, eng *engine.Engine) func(error)
	// Backend is where the runs' models run (nil: the float32 CPU
	// backend): the workspace builds every run's engine on it.
	Backend kernels.Backend
}

// record keeps a finished run in the plan's record, if it has one, with
// the process's peak resident memory when this process ran it (peak; 0
// for a run finished earlier).
func (env Env) record(r report.Run, cfg json.RawMessage, peak int64) error {
	if env.Record == nil || !r.Done {
		return nil
	}
	return env.Record.Put(RecordRow{Run: r, Config: cfg, Kernels: kernels.KernelName(), Build: env.Build, Version: RunsVersion(r.Condition),
		Model: env.ModelID, PeakRSSBytes: peak})
}

// Run runs (or resumes, or just reads) every job and returns the report
// rows in job order. Env.Workers jobs run at once (each run is
// deterministic on its own, so the results do not depend on it). A stored
// run under a job's id must have been started with the same configuration:
// a bench never silently mixes two plans. Jobs that share a run (one run
// standing in two accountings) run it once. Vote-only jobs run last: each
// takes its k from the finished seed-matched harness-only run of the same
// domain (its test-time calls per test episode over h0's at the start,
// rounded, 1–8), or keeps the plan's fixed k (VoteFrom says which).
func Run(ctx context.Context, env Env, jobs []Job) ([]report.Run, error) {
	jobs = slices.Clone(jobs)
	out := make([]report.Run, len(jobs))
	errs := make([]error, len(jobs))
	var first, votes []int
	for i, j := range jobs {
		if j.Condition == report.VoteOnly {
			votes = append(votes, i)
		} else {
			first = append(first, i)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runIndices(ctx, env, jobs, first, out, errs, cancel)
	from := make([]string, len(jobs))
	if ctx.Err() == nil {
		src, rows, err := voteSources(env, jobs, votes, out, true)
		if err != nil {
			return nil, err
		}
		for _, i := range votes {
			if from[i], errs[i] = jobs[i].resolveVote(src, rows); errs[i] != nil {
				break
			}
		}
		runIndices(ctx, env, jobs, votes, out, errs, cancel)
	}
	done, err := reportRows(jobs, out, errs, from)
	if err != nil {
		return done, err
	}
	if err := ctx.Err(); err != nil && len(done) < len(jobs) {
		return done, err
	}
	return done, nil
}

// reportRows are the report's rows of the jobs that have one (out[i]
// with no error), in job order, each with its job's accounting and, for
// vote-only, its k and where k came from (from[i]); the first error other
// than a cancellation is returned instead.
func reportRows(jobs []Job, out []report.Run, errs []error, from []string) ([]report.Run, error) {
	var done []report.Run
	for i, j := range jobs {
		if errs[i] != nil && !errors.Is(errs[i], context.Canceled) {
			return done, errs[i]
		}
		if errs[i] == nil && out[i].RunID != "" {
			r := out[i]
			r.Accounting = j.Accounting
			if j.Condition == report.VoteOnly {
				r.VoteK, r.VoteFrom = j.VoteK, from[i]
			}
			done = append(done, r)
		}
	}
	return done, nil
}

// FromRecord answers the jobs from env.Record alone, running none and
// opening no store: the report rows of the recorded runs, in job order,
// vote-only jobs resolved as Run resolves them (from the recorded
// seed-matched harness-only runs), how many distinct runs the jobs make
// and how many of them the record does not hold yet. It reads a bench
// that is still running, in this process or another (whale bench
// conditions --report-only): the runs it lacks are the report's missing
// ones. A recorded run of another model or configuration is an error, as
// it is for Run.
func FromRecord(env Env, jobs []Job) (rows []report.Run, runs, lacking int, err error) {
	if env.Record == nil {
		return nil, 0, 0, errors.New("experiments: a report from the record needs a record")
	}
	jobs = slices.Clone(jobs)
	out := make([]report.Run, len(jobs))
	errs := make([]error, len(jobs))
	from := make([]string, len(jobs))
	distinct, absent := map[string]bool{}, map[string]bool{}
	read := func(i int) error {
		distinct[jobs[i].ID] = true
		r, ok, err := env.Record.read(jobs[i], env.ModelID)
		switch {
		case err != nil:
			return err
		case ok:
			out[i] = r
		default:
			absent[jobs[i].ID] = true
		}
		return nil
	}
	var src []Job
	var srcRows []report.Run
	for pass := 0; pass < 2; pass++ {
		// Vote-only jobs second: their k comes from the harness-only rows.
		if pass == 1 {
			var votes []int
			for i, j := range jobs {
				if j.Condition == report.VoteOnly {
					votes = append(votes, i)
				}
			}
			if src, srcRows, err = voteSources(env, jobs, votes, out, false); err != nil {
				return nil, 0, 0, err
			}
		}
		for i, j := range jobs {
			if (j.Condition == report.VoteOnly) != (pass == 1) {
				continue
			}
			if pass == 1 {
				f, err := jobs[i].resolveVote(src, srcRows)
				if err != nil {
					return nil, 0, 0, err
				}
				from[i] = f
			}
			if err := read(i); err != nil {
				return nil, 0, 0, err
			}
		}
	}
	rows, err = reportRows(jobs, out, errs, from)
	return rows, len(distinct), len(absent), err
}

// runIndices runs the jobs at idx, Env.Workers at once, each run id once
// (a job sharing another's run takes its row), filling out and errs; the
// first error cancels the rest.
func runIndices(ctx context.Context, env Env, jobs []Job, idx []int, out []report.Run, errs []error, cancel func()) {
	say := env.Progress
	if say == nil {
		say = func(string) {}
	}
	var mu sync.Mutex
	locked := func(line string) { mu.Lock(); defer mu.Unlock(); say(line) }
	// Lines number runs, not jobs ([n/total] over the plan's distinct run
	// ids, in plan order), as the dashboard numbers its rows: a run that
	// stands in two accountings has one number.
	runNo, runs := map[string]int{}, 0
	for _, j := range jobs {
		if _, ok := runNo[j.ID]; !ok {
			runs++
			runNo[j.ID] = runs
		}
	}
	owner := map[string]int{}
	var unique []int
	for _, i := range idx {
		if _, ok := owner[jobs[i].ID]; !ok {
			owner[jobs[i].ID] = i
			unique = append(unique, i)
		}
	}
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
				out[i], errs[i] = runJob(ctx, env, jobs[i], fmt.Sprintf("[%d/%d]", runNo[jobs[i].ID], runs), locked)
				if errs[i] != nil {
					cancel()
				}
			}
		}()
	}
	for _, i := range unique {
		if ctx.Err() != nil {
			errs[i] = ctx.Err()
			continue
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, i := range idx {
		if o := owner[jobs[i].ID]; o != i {
			out[i], errs[i] = out[o], errs[o]
		}
	}
}

// voteSources are the jobs and rows the vote-only jobs at votes take k
// from: the plan's own (jobs, rows), and the harness-only runs of kFrom
// that the plan does not hold, read from the store (with useStore) and the
// record; a run found in neither is left out (its vote keeps the fixed
// k).
func voteSources(env Env, jobs []Job, votes []int, rows []report.Run, useStore bool) ([]Job, []report.Run, error) {
	src, out := jobs, rows
	seen := map[string]bool{}
	for _, i := range votes {
		h := jobs[i].kFrom
		if h == nil || seen[h.ID] {
			continue
		}
		seen[h.ID] = true
		r, ok, err := env.lookup(*h, useStore)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			src, out = append(slices.Clip(src), *h), append(slices.Clip(out), r)
		}
	}
	return src, out, nil
}

// lookup reads job j's finished run from the store (with useStore, where
// the env has one) or else from the record.
func (env Env) lookup(j Job, useStore bool) (report.Run, bool, error) {
	if useStore && env.Store != nil {
		r, _, err := collect(env.Store, j)
		switch {
		case err == nil && r.Done:
			return r, true, nil
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return r, false, err
		}
	}
	if env.Record != nil {
		return env.Record.read(j, env.ModelID)
	}
	return report.Run{}, false, nil
}

// resolveVote sets a vote-only job's k (and with it its harness and id)
// from the seed-matched harness-only run among rows (jobs' rows), and
// returns where k came from: "harness-only", or "fixed" (the plan's k)
// when that run is not finished or measured no test-time calls.
func (j *Job) resolveVote(jobs []Job, rows []report.Run) (string, error) {
	k, from := j.VoteK, "fixed"
	best := -1
	for i, o := range jobs {
		r := rows[i]
		if o.Condition != report.HarnessOnly || o.Domain != j.Domain || o.Seed != j.Seed || !r.Done || r.TestCallsPerEpisode <= 0 || r.StartCallsPerEpisode <= 0 {
			continue
		}
		// The paper accounting's run where there is one.
		if best < 0 || (jobs[best].Accounting == report.AccountingEqualTotal && o.Accounting != report.AccountingEqualTotal) {
			best = i
		}
	}
	if best >= 0 {
		r := rows[best]
		k, from = max(1, min(8, int(math.Round(r.TestCallsPerEpisode/r.StartCallsPerEpisode)))), report.HarnessOnly
	}
	src, err := engine.VoteHarness(j.Domain, k)
	if err != nil {
		return "", err
	}
	j.VoteK, j.Config.Harness, j.ID = k, src, voteID(j.prefix, j.Domain, src, k, j.Seed)
	return from, nil
}

// runJob runs, resumes or reads one job.
func runJob(ctx context.Context, env Env, j Job, tag string, say func(string)) (report.Run, error) {
	r, cfg, err := collect(env.Store, j)
	fresh := errors.Is(err, store.ErrNotFound)
	switch {
	case err == nil && r.Done:
		say(fmt.Sprintf("%s %s: finished earlier, best test mean@8 %.3f", tag, j.ID, r.BestTestMean8))
		return r, env.record(r, cfg, 0)
	case err != nil && !fresh:
		return r, err
	}
	if fresh && env.Record != nil {
		rr, ok, err := env.Record.read(j, env.ModelID)
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
	ws := engine.NewWorkspace(env.Store, env.Backend)
	eenv := engine.Env{Domain: dom, Bundle: m}
	if env.Policy != nil {
		eenv.Policy = env.Policy(dom)
	}
	var eng *engine.Engine
	if fresh {
		say(fmt.Sprintf("%s %s: starting", tag, j.ID))
		eng, err = ws.StartRun(j.ID, j.Config, eenv)
		if err == nil {
			err = env.Store.SetRunLabel(j.ID, labelRunsVersion, strconv.Itoa(RunsVersion(j.Condition)))
		}
	} else {
		say(fmt.Sprintf("%s %s: resuming", tag, j.ID))
		eng, err = ws.Resume(j.ID, eenv)
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
		err = env.record(r, cfg, procstat.PeakRSS())
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
	cfg, err := engine.DecodeConfig(j.ID, stored)
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
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
	st, err := engine.DecodeState(j.ID, sr.Cursor)
	if err != nil {
		return r, fmt.Errorf("experiments: %w", err)
	}
	r.Phases = len(st.Phases)
	r.Rollouts, r.EvalRollouts = st.Ledger.Budgeted(), st.Ledger.EvalCalls
	r.TrainCalls, r.SearchCalls = st.Ledger.TrainCalls, st.Ledger.SearchCalls
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
		r.TestCallsPerEpisode, r.StartCallsPerEpisode, r.TestPerTask = st.Summary.TestCallsPerEpisode, st.Summary.StartCallsPerEpisode, st.Summary.TestPerTask
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
