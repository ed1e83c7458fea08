package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"whale/core/bundle"
	"whale/core/engine"
	"whale/core/experiments"
	"whale/core/experiments/report"
	"whale/core/store"
	"whale/data"
	"whale/data/domains"
	"whale/kernels"
	"whale/tui"
)

func init() { register(newSweepCmd) }

// benchBudgets are the default budgets (model calls) per run of each
// preset. small's is the small preset's own, 4,608 (core/engine's presets
// say how it was sized); docs/results/RESULTS.md records how long the
// committed bench took.
var benchBudgets = map[string]int{"tiny": 64, "small": 4608, "paper": 200000}

// sweepBudgets are the pre-check's smaller budgets.
var sweepBudgets = map[string]int{"tiny": 48, "small": 768, "paper": 50000}

// experimentFlags are the flags bench conditions and sweep share.
type experimentFlags struct {
	domain, dataPath, format, preset, dbPath, modelPath string
	budget, seeds, workers                              int
	progressEvery                                       time.Duration
	// modelName and modelHash name the starting weights (set by plan).
	modelName, modelHash string
	backend              backendFlag
	// noStore makes plan open no workspace (env.Store stays nil): a
	// report from the record reads no run's store, and the bench that
	// holds it may be running.
	noStore bool
}

func (f *experimentFlags) add(c *cobra.Command, seeds int) {
	fl := c.Flags()
	fl.StringVar(&f.domain, "domain", "", "math, searchqa, chess, a comma-separated list of them, or all")
	fl.StringVar(&f.dataPath, "data", "", "import tasks from FILE instead of the generated splits (one domain)")
	formatFlag(fl, &f.format)
	fl.StringVar(&f.preset, "preset", "small", "run size: small or paper (tiny for tests)")
	fl.IntVar(&f.budget, "budget", 0, "training + harness-scoring rollouts per run (0: the preset's default)")
	fl.IntVar(&f.seeds, "seeds", seeds, "seeds per condition")
	fl.StringVar(&f.dbPath, "db", "bench.db", "workspace file of the bench's runs (kept apart from whale.db, so the workbench never offers to resume a bench run); rerunning the same command resumes from it")
	fl.StringVar(&f.modelPath, "model", "", modelUsage)
	fl.DurationVar(&f.progressEvery, "progress-every", 30*time.Second, "without a terminal: a progress line per running run this often (on a terminal the dashboard shows them)")
	f.backend.register(fl)
	fl.IntVar(&f.workers, "workers", 0, "runs at once, each with CPUs/workers threads (0: one run per CPU; small models gain more from parallel runs than from threads, docs/PERFORMANCE.md)")
}

// plan checks the flags and returns the plan with the experiments
// environment (the caller closes env.Store, which is nil under noStore).
func (f *experimentFlags) plan(defaults map[string]int, prefix string) (experiments.Plan, experiments.Env, error) {
	var p experiments.Plan
	switch {
	case f.domain == "":
		return p, experiments.Env{}, usageError{errors.New("--domain is required (" + strings.Join(domains.Names(), ", ") + " or all)")}
	case (f.dataPath == "") != (f.format == ""):
		return p, experiments.Env{}, usageError{errors.New("--data and --format go together")}
	case f.dataPath != "" && f.domain == "all":
		return p, experiments.Env{}, usageError{errors.New("--data holds one domain's tasks: name that domain instead of all")}
	case f.seeds < 1:
		return p, experiments.Env{}, usageError{fmt.Errorf("--seeds %d: want at least 1", f.seeds)}
	case f.workers < 0:
		return p, experiments.Env{}, usageError{fmt.Errorf("--workers %d: want at least 1 (0: one per CPU)", f.workers)}
	case f.budget < 0:
		return p, experiments.Env{}, usageError{fmt.Errorf("--budget %d: want a positive rollout count (0: the preset's default)", f.budget)}
	}
	budget, ok := defaults[f.preset]
	if !ok {
		return p, experiments.Env{}, usageError{fmt.Errorf("--preset %q: want small or paper (or tiny)", f.preset)}
	}
	if f.budget > 0 {
		budget = f.budget
	}
	ds := strings.Split(f.domain, ",")
	if f.domain == "all" {
		ds = domains.Names()
	}
	if len(ds) > 1 {
		for _, d := range ds {
			if !slices.Contains(domains.Names(), d) {
				return p, experiments.Env{}, usageError{fmt.Errorf("--domain %q: %q is not a domain (want a comma-separated list of %s, or all)", f.domain, d, strings.Join(domains.Names(), ", "))}
			}
		}
		if f.dataPath != "" {
			return p, experiments.Env{}, usageError{errors.New("--data holds one domain's tasks: name that domain alone")}
		}
	}
	if err := f.backend.open(); err != nil {
		return p, experiments.Env{}, err
	}
	// Check the model once now, so a bad --model fails before any run.
	b, err := openModel(f.modelPath)
	if err != nil {
		return p, experiments.Env{}, err
	}
	f.modelName, f.modelHash = b.Name, b.SHA256
	dataSeed := b.DataSeed
	p = experiments.Plan{Domains: ds, Seeds: f.seeds, Preset: f.preset, Budget: budget, FastSlowE: 0.1,
		DataSeed: dataSeed, Prefix: prefix}
	var db *store.DB
	if !f.noStore {
		if db, err = openStore(f.dbPath); err != nil {
			return p, experiments.Env{}, err
		}
	}
	if f.workers == 0 {
		f.workers = runtime.NumCPU()
	}
	if f.workers > 1 {
		kernels.SetThreads(max(1, runtime.NumCPU()/f.workers))
	}
	opened := map[string]data.Domain{}
	var mu sync.Mutex
	env := experiments.Env{Store: db, Workers: f.workers, Backend: runBackend(),
		Domain: func(name string) (data.Domain, error) {
			mu.Lock()
			defer mu.Unlock()
			if d, ok := opened[name]; ok {
				return d, nil
			}
			d, err := runDomain(name, f.dataPath, f.format, dataSeed)
			if err == nil {
				opened[name] = d
			}
			return d, err
		},
		Model: func() (*bundle.Bundle, error) { return openModel(f.modelPath) }}
	m, err := openModel(f.modelPath)
	if err != nil {
		return p, experiments.Env{}, err
	}
	env.ModelID = m.SHA256
	return p, env, nil
}

// runPlan runs a plan's jobs; Ctrl-C stops at the running jobs' last
// resume points. On a terminal the bench dashboard shows them (enter opens
// a run in the workbench); otherwise stderr hears a line per started or
// finished run and, every --progress-every, one per running run. Other
// processes can watch the runs through the workspace's socket meanwhile.
func runPlan(cmd *cobra.Command, p experiments.Plan, env experiments.Env, every time.Duration) ([]report.Run, error) {
	jobs, err := p.Jobs()
	if err != nil {
		return nil, usageError{err}
	}
	ctx, cancel := interruptible(cmd.Context())
	defer cancel()
	srv := serveStore(cmd, env.Store)
	defer srv.Close()
	// A bench's runs are measurements: viewers in other terminals watch
	// them read-only unless they ask to steer (whale tui --steer), and a
	// steered run is marked in the report and the record.
	srv.ServeReadOnly("bench")
	bjobs, err := benchJobs(env.Store, env.Record, jobs)
	if err != nil {
		return nil, err
	}
	// The bench's workers, the headless dashboard's commands and the live
	// hook all write here, each from its own goroutine.
	log := &lockedWriter{w: cmd.ErrOrStderr()}
	opts := tui.BenchOptions{Title: planTitle(p), Jobs: bjobs, Stop: cancel}
	popts := []tea.ProgramOption{tea.WithAltScreen()}
	if in, ok := cmd.InOrStdin().(*os.File); !ok || !isTerminal(in) || !isTerminal(cmd.OutOrStdout()) {
		opts.Progress, opts.ProgressEvery = log, every
		env.Progress = func(line string) { fmt.Fprintln(log, line) }
		popts = []tea.ProgramOption{tea.WithInput(nil), tea.WithoutRenderer(), tea.WithoutSignalHandler(), tea.WithOutput(io.Discard)}
	}
	prog := tea.NewProgram(tui.NewBench(opts), popts...)
	env.Live = func(j experiments.Job, eng *engine.Engine) func(error) {
		remove := srv.Add(eng.RunID, eng)
		// Subscribed before the stored events are read, and the engine
		// has not started: the dashboard misses nothing and sees nothing twice.
		sub := eng.Subscribe(4096)
		hist, err := engine.StoredEvents(env.Store, j.ID, 0, 0)
		if err != nil {
			fmt.Fprintf(log, "%s: %v\n", j.ID, err)
		}
		prog.Send(tui.BenchRunStarted{ID: j.ID, Events: sub, Opt: tui.Options{RunID: j.ID, Domain: j.Domain, ModelDesc: j.Condition,
			Schedule: eng.Cfg.ScheduleName(), Preset: eng.Cfg.Preset, Budget: eng.Cfg.TotalBudget(), Control: eng, History: hist,
			Samples: storeSamples(env.Store, j.ID), HarnessSource: harnessSource(env.Store), Progress: eng.Progress, Gold: eng.Gold()}})
		return func(err error) {
			remove()
			prog.Send(tui.BenchRunEnded{ID: j.ID, Err: err})
		}
	}
	var runs []report.Run
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runs, runErr = experiments.Run(ctx, env, jobs)
		prog.Send(tui.BenchFinished{Err: runErr})
	}()
	_, perr := prog.Run()
	cancel() // the dashboard closed: nobody watches, so the bench stops at its resume points
	<-done
	if perr != nil {
		return nil, fmt.Errorf("bench dashboard: %w", perr)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%w (the finished runs are stored: run the same command again to continue)", runErr)
	}
	return runs, nil
}

// benchJobs are the dashboard's rows: each job with what the store (or,
// for runs it has never seen, the record) holds of its run already.
func benchJobs(db *store.DB, rec *experiments.Record, jobs []experiments.Job) ([]tui.BenchJob, error) {
	// A run that stands in two accountings is one row.
	var uniq []experiments.Job
	seen := map[string]bool{}
	for _, j := range jobs {
		if !seen[j.ID] {
			seen[j.ID] = true
			uniq = append(uniq, j)
		}
	}
	jobs = uniq
	out := make([]tui.BenchJob, len(jobs))
	for i, j := range jobs {
		out[i] = tui.BenchJob{ID: j.ID, Condition: j.Condition, Domain: j.Domain, Seed: j.Seed, Budget: j.Config.TotalBudget()}
		r, err := db.GetRun(j.ID)
		if errors.Is(err, store.ErrNotFound) {
			out[i].Done = rec != nil && rec.Has(j.ID)
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i].Done = r.Status == "finished"
		if out[i].History, err = engine.StoredEvents(db, j.ID, 0, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func planTitle(p experiments.Plan) string {
	if p.TrainCalls > 0 || p.SearchCalls > 0 {
		return fmt.Sprintf("%s · %s · preset %s · %d training + %d search calls per run · %d seed(s)", p.Prefix, strings.Join(p.Domains, ", "), p.Preset, p.TrainCalls, p.SearchCalls, p.Seeds)
	}
	return fmt.Sprintf("%s · %s · preset %s · %d model calls per run · %d seed(s)", p.Prefix, strings.Join(p.Domains, ", "), p.Preset, p.Budget, p.Seeds)
}

func newBenchConditionsCmd() *cobra.Command {
	var f experimentFlags
	var out, conds, record, accs, shard string
	var reportOnly bool
	var e float64
	var i, curveK, trainCalls, searchCalls, voteK int
	var curveDense bool
	var testTasks int
	var tb tensorBoardFlag
	var cf configFileFlag
	c := &cobra.Command{
		Use:   "conditions --domain D|all",
		Short: "Compare WHALE with weight-only, harness-only, vote-only, staged and Fast-Slow Training on the paper's ledgers and at equal total calls",
		Long: "Runs every condition × domain × seed as a stored run (so an interrupted bench resumes where it\n" +
			"stopped) under two accountings: paper (every condition that trains gets the same weight ledger,\n" +
			"every condition that searches the same search ledger) and equal-total (weight-only and harness-only\n" +
			"at the ledgers' sum; the others' paper runs already spend it); --budget instead gives every\n" +
			"condition one budget. It writes RESULTS.md,\n" +
			"results.csv and one chart per domain to --out. Test scores are each run's best-val checkpoint's;\n" +
			"the learning curves measure test mean@k (--curve-k) at the start and at phase boundaries 1, 2, 4, 8, … and the last\n" +
			"(--curve-dense: every boundary) without selecting on it.\n" +
			"Conditions: " + strings.Join(report.Conditions, ", ") + ".",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := cf.apply(cmd.Flags(), false); err != nil {
				return err
			}
			if reportOnly && record == "-" {
				return usageError{errors.New("--report-only writes the report from the record: drop --record -")}
			}
			if reportOnly && shard != "" {
				return usageError{errors.New("--report-only reads every shard's runs from the record: drop --shard")}
			}
			f.noStore = reportOnly
			p, env, err := f.plan(benchBudgets, "bench")
			if err != nil {
				return err
			}
			if env.Store != nil {
				defer env.Store.Close()
			}
			if record != "-" {
				if record == "" {
					record = filepath.Join(out, experiments.RecordFile)
				}
				if env.Record, err = experiments.OpenRecord(record); err != nil {
					return err
				}
				if rev, modified := buildRevision(); rev != "" {
					env.Build = rev
					if modified {
						env.Build += "+"
					}
				}
			}
			p.E, p.I, p.CurveK, p.VoteK, p.CurveDense = e, i, curveK, voteK, curveDense
			if testTasks < 0 {
				return usageError{fmt.Errorf("--test-tasks %d: want a positive count (0: the preset's)", testTasks)}
			}
			p.TestTasks = testTasks
			if testTasks > 0 && !reportOnly {
				for _, d := range p.Domains {
					dom, err := env.Domain(d)
					if err != nil {
						return err
					}
					ts, err := dom.Tasks(data.SplitTest)
					if err != nil {
						return err
					}
					if testTasks > len(ts) {
						return usageError{fmt.Errorf("--test-tasks %d: the test split of %s holds %d tasks", testTasks, d, len(ts))}
					}
				}
			}
			if shard != "" {
				sh, err := experiments.ParseShard(shard)
				if err != nil {
					return usageError{fmt.Errorf("--shard: %w", err)}
				}
				if env.Record == nil {
					return usageError{errors.New("--shard keeps its runs in the record, for the final call without --shard to read: drop --record -")}
				}
				p.Shard = &sh
			}
			if conds != "" {
				p.Conditions = strings.Split(conds, ",")
			}
			if !cmd.Flags().Changed("budget") {
				// The paper's two ledgers, the preset's unless given.
				if p.TrainCalls, p.SearchCalls, err = benchLedgers(p.Preset, trainCalls, searchCalls); err != nil {
					return usageError{err}
				}
				p.Budget = 0
				if accs != "" {
					p.Accountings = strings.Split(accs, ",")
				}
			} else if trainCalls > 0 || searchCalls > 0 || accs != "" {
				return usageError{errors.New("--budget (one ledger, every condition at that total) excludes --train-calls, --search-calls and --accountings")}
			}
			t0 := time.Now()
			var runs []report.Run
			var partial string
			if reportOnly {
				if partial, runs, err = reportFromRecord(p, env); err != nil {
					return err
				}
			} else {
				stopTB := tb.follow(env.Store, cmd.ErrOrStderr())
				runs, err = runPlan(cmd, p, env, f.progressEvery)
				if err = errors.Join(err, stopTB()); err != nil {
					return err
				}
			}
			if p.Shard != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "shard %s: %d runs finished, kept in %s; when every shard is done, the same command without --shard (and with a --db of its own) writes the report\n",
					p.Shard, len(runs), env.Record.Path())
				return nil
			}
			meta := report.Meta{Command: "whale " + strings.Join(os.Args[1:], " "), Preset: p.Preset, Budget: p.Budget, Seeds: p.Seeds, CurveK: p.CurveK,
				TrainCalls: p.TrainCalls, SearchCalls: p.SearchCalls, Notes: benchNotes(f.modelName, f.modelHash, p)}
			if reportOnly {
				meta.FromRecord = true
				meta.Notes = append([]string{partial}, meta.Notes...) // it ran nothing: no time to report
			} else {
				meta.Notes = append(meta.Notes, invocationNote(time.Since(t0), env.Record))
			}
			switch h, err := os.ReadFile(filepath.Join(out, report.HistoryMD)); {
			case err == nil:
				meta.History = string(h)
			case !errors.Is(err, fs.ErrNotExist):
				return err
			}
			if err := report.Write(out, runs, meta); err != nil {
				return err
			}
			for _, t := range report.TablesByAccounting(runs) {
				for _, cell := range t.Cells {
					if cell.N == 0 {
						continue // not in this invocation's plan, or not finished
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%-11s %-8s %-15s %5.1f  [%5.1f, %5.1f]  n=%d\n", t.Accounting, cell.Domain, cell.Condition,
						100*cell.Mean, 100*cell.CI95[0], 100*cell.CI95[1], cell.N)
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "report: %s\n", out)
			return nil
		},
	}
	f.add(c, 3)
	c.Flags().StringVar(&out, "out", "docs/results", "folder for RESULTS.md, results.csv and the charts")
	c.Flags().StringVar(&conds, "conditions", "", "comma-separated subset of the conditions (default: all seven)")
	c.Flags().IntVar(&trainCalls, "train-calls", 0, "the weight ledger of the paper accounting: training calls of every condition that trains (0: the preset's; small 5760)")
	c.Flags().IntVar(&searchCalls, "search-calls", 0, "the search ledger of the paper accounting: harness-scoring calls of every condition that searches (0: the preset's; small 6144)")
	c.Flags().StringVar(&accs, "accountings", "", "comma-separated: paper (the two ledgers), equal-total (weight-only and harness-only at their sum) (default: both)")
	c.Flags().IntVar(&voteK, "vote-k", 0, fmt.Sprintf("vote-only's SAMPLES where no finished seed-matched harness-only run gives one (0: %d)", experiments.DefaultVoteK))
	c.Flags().BoolVar(&reportOnly, "report-only", false, "run nothing: write the report from the record's finished runs (the others listed as missing), to read a bench that is still running or resumes later; opens no --db")
	c.Flags().StringVar(&shard, "shard", "", "I/N: run only shard I of N of the jobs (0 ≤ I < N) and keep them in the record, in a folder the shards share; no report (the call without --shard writes it from the record; whale bench plan emits a cluster's jobs)")
	c.Flags().StringVar(&record, "record", "", "file of the finished runs, kept beside the report: runs the store has never seen are read from it, not rerun (default: <out>/"+experiments.RecordFile+"; -: keep none)")
	c.Flags().Float64Var(&e, "E", 0, "WHALE-fixed: weight steps per cycle as a fraction of an epoch (0: the preset's; small 0.6)")
	c.Flags().IntVar(&i, "I", 0, "WHALE-fixed: harness iterations per cycle, the incoming harness's evaluation counted (0: the preset's; small 6)")
	tb.register(c.Flags())
	cf.register(c.Flags(), "the bench's flags")
	c.Flags().IntVar(&testTasks, "test-tasks", 0, "test tasks of every run (0: the preset's, small 256): fewer make the bench cheaper and its intervals wider")
	c.Flags().BoolVar(&curveDense, "curve-dense", false, "measure the curves' test at every phase boundary (default: at the start, boundaries 1, 2, 4, 8, … and the last)")
	c.Flags().IntVar(&curveK, "curve-k", 1, "samples per test task at each phase boundary, for the learning curves and the per-cycle attribution (the best checkpoint's test score is always at the preset's k, 8)")
	return c
}

// reportFromRecord answers p's jobs from env.Record alone (--report-only)
// and returns the report's note on what it holds with the rows.
func reportFromRecord(p experiments.Plan, env experiments.Env) (string, []report.Run, error) {
	jobs, err := p.Jobs()
	if err != nil {
		return "", nil, usageError{err}
	}
	runs, total, lacking, err := experiments.FromRecord(env, jobs)
	if err != nil {
		return "", nil, err
	}
	if lacking == total {
		if !env.Record.Found() {
			return "", nil, fmt.Errorf("--report-only: there is no record at %s (is it the bench's --out or --record?)", env.Record.Path())
		}
		return "", nil, fmt.Errorf("--report-only: the record %s holds none of this plan's %d runs yet (is it the bench's --out or --record, with its flags?)", env.Record.Path(), total)
	}
	note := fmt.Sprintf("Partial report, written with --report-only from the record %s while the bench is under way: %d of the plan's %d distinct runs are finished; the others are listed as missing, and every mean and interval is over the seeds finished so far.",
		filepath.Base(env.Record.Path()), total-lacking, total)
	if lacking == 0 {
		note = fmt.Sprintf("Written with --report-only from the record %s: all of the plan's %d distinct runs are in it.", filepath.Base(env.Record.Path()), total)
	}
	return note + originsNote(env.Record), runs, nil
}

// invocationNote says how long this invocation took, which of its runs it
// read from the record rather than ran, and what builds the record mixes.
func invocationNote(took time.Duration, rec *experiments.Record) string {
	read := ""
	if rec != nil && rec.Reads() > 0 {
		read = fmt.Sprintf(" %d runs were read from the record %s: they ran in earlier invocations whose store this one does not have (their compute times are those invocations').", rec.Reads(), filepath.Base(rec.Path()))
	}
	if rec != nil && rec.Stale() > 0 {
		read += fmt.Sprintf(" %d recorded runs were made by code that computes their condition differently (an older experiments.RunsVersion) or recorded without naming their starting model, and were run again.", rec.Stale())
	}
	return fmt.Sprintf("This invocation took %s on this machine (runs finished earlier are read, not rerun).%s", took.Round(time.Second), read+originsNote(rec))
}

// originsNote says, with a leading space, when the record's runs come from
// more than one build or kernel set ("" otherwise).
func originsNote(rec *experiments.Record) string {
	if rec == nil {
		return ""
	}
	origins := rec.Origins()
	if len(origins) < 2 {
		return ""
	}
	var parts []string
	for _, o := range slices.Sorted(maps.Keys(origins)) {
		parts = append(parts, fmt.Sprintf("%d from %s", origins[o], o))
	}
	return " The record's runs come from different builds or kernels (" + strings.Join(parts, "; ") + "): each run is deterministic for its build on its machine, but other arithmetic rounds differently, so runs of one condition then differ by more than their seeds."
}

// benchNotes says what the numbers rest on.
func benchNotes(name, sum string, p experiments.Plan) []string {
	e, i, _ := p.FixedPoint() // the plan's preset was checked when its jobs were made
	evaluated, err := experiments.EvaluationNote(p)
	if err != nil {
		evaluated = "" // the plan's preset was checked when its jobs were made
	}
	return []string{
		fmt.Sprintf("Starting weights: %s (sha256 %s). Every run of a domain starts from them and from the built-in h0 harness.", name, engine.ShortHash(sum)),
		fmt.Sprintf("Conditions: weight-only = RSFT under h0; harness-only = harness search (the fragment proposer, paired scoring) over the base weights; vote-only = h0 with SAMPLES = k under its plurality vote, nothing trained or searched, k the seed-matched harness-only run's test-time calls per test episode over h0's (rounded, 1–8; the plan's fixed k, %d, where that run is absent; each row says which); staged = the weight ledger (one budget: half of it), then harness search; fast-slow = each cycle one harness round over a Pareto population (≤ 4 harnesses, per-val-task front) then round(%.2g epoch) weight steps sampling across it; whale-fixed = (E, I) = (%.2g, %d); whale-adaptive = the patience schedule. RSFT trains on every verified-correct sample a voting harness drew, once per distinct completion.", voteKOf(p), p.FastSlowE, e, i),
		"Test sets: every run is tested on the same 256 test tasks of its domain (data seed of the base model); a seed changes everything the run samples but not the split. Paired differences are bootstrapped over seeds and test tasks together, so their intervals carry the test set's own error.",
		evaluated,
	}
}

func newSweepCmd() *cobra.Command {
	var f experimentFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "sweep --domain D",
		Short: "Pre-check: weight-only vs harness-only at a small budget, the gap and a recommendation",
		Long: "Runs weight-only training and harness-only search at the same small rollout budget (stored runs,\n" +
			"resumable) and prints the gap in best test mean@8 with its 95 % interval and a plain\n" +
			"recommendation: under 2 points the bottleneck is not one-sided and alternation may not pay.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.domain == "all" {
				return usageError{errors.New("sweep takes one --domain at a time")}
			}
			p, env, err := f.plan(sweepBudgets, "sweep")
			if err != nil {
				return err
			}
			defer env.Store.Close()
			p.Conditions = experiments.SweepConditions
			runs, err := runPlan(cmd, p, env, f.progressEvery)
			if err != nil {
				return err
			}
			g, err := experiments.Sweep(f.domain, runs)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), g)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s, budget %d rollouts, %d seed(s)\n", g.Domain, p.Budget, g.Seeds)
			fmt.Fprintf(w, "  weight-only   best test mean@8 %5.1f\n", 100*g.WeightOnly)
			fmt.Fprintf(w, "  harness-only  best test mean@8 %5.1f\n", 100*g.HarnessOnly)
			fmt.Fprintf(w, "  gap (harness − weights) %+.1f points, 95%% CI [%+.1f, %+.1f]\n", 100*g.Gap, 100*g.CI95[0], 100*g.CI95[1])
			fmt.Fprintf(w, "%s\n", g.Advice)
			return nil
		},
	}
	f.add(c, 1)
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

// lockedWriter serializes writes to w: each Write reaches w whole, never
// interleaved with another goroutine's.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// benchLedgerDefaults are the bench's ledgers of presets that have none
// (tiny: the tests'; paper: the reference's scale).
var benchLedgerDefaults = map[string][2]int{"tiny": {32, 32}, "paper": {150000, 50000}}

// benchLedgers are the paper accounting's ledgers: the flags', else the
// preset's, else benchLedgerDefaults.
func benchLedgers(preset string, train, search int) (int, int, error) {
	if train < 0 || search < 0 {
		return 0, 0, fmt.Errorf("--train-calls %d, --search-calls %d: want ≥ 0 (0: the preset's)", train, search)
	}
	cfg, err := engine.Preset(preset, "math")
	if err != nil {
		return 0, 0, err
	}
	t, s := cfg.TrainCalls, cfg.SearchCalls
	if d, ok := benchLedgerDefaults[preset]; ok && t == 0 && s == 0 {
		t, s = d[0], d[1]
	}
	if train > 0 {
		t = train
	}
	if search > 0 {
		s = search
	}
	return t, s, nil
}

// voteKOf is vote-only's fixed k under p.
func voteKOf(p experiments.Plan) int {
	if p.VoteK > 0 {
		return p.VoteK
	}
	return experiments.DefaultVoteK
}
