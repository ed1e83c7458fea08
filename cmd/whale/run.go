package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"whale/core/attach"
	"whale/core/bundle"
	"whale/core/engine"
	"whale/core/model"
	"whale/core/store"
	"whale/data"
	"whale/data/domains"
)

func init() {
	register(newRunCmd)
	register(newRunsCmd)
	register(newShowCmd)
	register(newResumeCmd)
}

// openRun opens the workspace and reads one run from it; on success the
// caller closes the workspace.
func openRun(dbPath, id string) (*engine.Workspace, engine.RunView, error) {
	ws, err := openExistingWorkspace(dbPath)
	if err != nil {
		return nil, engine.RunView{}, err
	}
	v, err := ws.Load(id)
	if err != nil {
		ws.Close()
		return nil, engine.RunView{}, err
	}
	return ws, v, nil
}

// openStore opens the workspace named by --db, failing within a second if
// another process holds it.
func openStore(path string) (*store.DB, error) {
	return store.Open(path, time.Second)
}

// interruptible returns a context cancelled by SIGINT or SIGTERM.
func interruptible(parent context.Context) (context.Context, context.CancelFunc) {
	if parent == nil {
		parent = context.Background()
	}
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// runDomain opens the run's domain: generated from seed (the model's data
// seed, so the splits are the ones its pretraining never saw beyond train),
// or imported with --data.
func runDomain(domain, dataPath, format string, seed uint64) (data.Domain, error) {
	if dataPath == "" {
		return domains.Open(domain, seed)
	}
	dom, _, err := domains.Import(format, dataPath, data.ImportOptions{Seed: seed})
	if err != nil {
		return nil, err
	}
	if dom.Name() != domain {
		return nil, fmt.Errorf("--data %s holds %s tasks, not %s", dataPath, dom.Name(), domain)
	}
	return dom, nil
}

// runFlags are whale run's flags.
type runFlags struct {
	domain, dataPath, format, schedule, op, preset, dbPath, modelPath, harness string
	proposer, gridKnobs, proposerURL, proposerModel, condition, fromCkpt       string
	e, lr, kl, harnessPasses                                                   float64
	i, budget, rounds, replay, candidates, harnessCalls                        int
	trainCalls, searchCalls                                                    int
	seed                                                                       uint64
	headless, asJSON, sampleBF16                                               bool
	envf                                                                       envFlags
	server                                                                     serverFlags
	backend                                                                    backendFlag
	lora                                                                       loraFlags
	file                                                                       configFileFlag
}

func newRunCmd() *cobra.Command {
	var fl runFlags
	c := &cobra.Command{
		Use:   "run --headless --domain D",
		Short: "Run a WHALE alternation: weight phases and harness phases under a schedule",
		Long: "Starts a run in the workspace (--db): Phase A trains the weights by rejection sampling through the\n" +
			"current harness, Phase B searches harnesses against the frozen weights, and the schedule\n" +
			"(fixed (E, I) or adaptive patience) decides when to switch. Progress goes to stderr; the run\n" +
			"can be interrupted (Ctrl-C) and continued with 'whale resume RUN'. --policy-url URL --policy-model NAME\n" +
			"makes an OpenAI-compatible server (repeat it for a pool) sample the rollouts: with --condition\n" +
			"harness-only, or, for weight phases, with --lora-rank and --fleet-adapters DIR (vLLM servers that load\n" +
			"each version of the adapters; docs/SCALING.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return fl.run(cmd) },
	}
	fl.register(c.Flags())
	return c
}

func (fl *runFlags) register(f *pflag.FlagSet) {
	headlessFlag(f, &fl.headless)
	f.StringVar(&fl.domain, "domain", "", "math, searchqa or chess")
	f.StringVar(&fl.dataPath, "data", "", dataUsage)
	formatFlag(f, &fl.format)
	f.StringVar(&fl.schedule, "schedule", "fixed", "fixed or adaptive")
	f.Float64Var(&fl.e, "E", 0, "fixed schedule: weight steps per cycle as a fraction of an epoch (preset default)")
	f.IntVar(&fl.i, "I", 0, "fixed schedule: harness iterations per cycle, the incoming harness's evaluation counted (preset default)")
	f.StringVar(&fl.op, "weights", "rsft", "weight operator: rsft, dpo or grpo")
	f.Float64Var(&fl.lr, "lr", 0, "the weight operator's learning rate (preset default; small: 1e-5)")
	f.Float64Var(&fl.kl, "kl", 0, "rsft or grpo: weight of a KL penalty towards each weight phase's starting weights (preset default; 0: off)")
	f.StringVar(&fl.preset, "preset", "small", "run size: "+strings.Join(engine.PresetNames(), ", "))
	f.IntVar(&fl.budget, "budget", 0, "one ledger: model calls of training + harness scoring together, in place of the preset's two ledgers (0: the preset's rounds decide)")
	f.IntVar(&fl.trainCalls, "train-calls", 0, "the weight ledger: model calls of weight-phase rollouts; weight phases stop at it (preset default; small: 5760). Evaluation spends no ledger")
	f.IntVar(&fl.searchCalls, "search-calls", 0, "the search ledger: model calls of harness scoring; harness phases stop at it (preset default; small: 6144)")
	f.IntVar(&fl.harnessCalls, "harness-calls", 0, "model calls one harness phase may spend in WHALE's alternation, the incoming harness's re-score always paid (preset default; small bounds its phases in passes instead, --harness-passes 18; 0 with the flag: no bound but I)")
	f.Float64Var(&fl.harnessPasses, "harness-passes", 0, "bound each harness phase of WHALE's alternation in passes of its incumbent over the val tasks, at the incumbent's price when the phase begins, instead of --harness-calls (1 + S: its re-score and one S-sample candidate; 2 + 2S: and that candidate's confirming pass)")
	f.IntVar(&fl.rounds, "rounds", 0, "cycles (weights then harness) before the run ends (preset default)")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of everything the run samples")
	dbFlag(f, &fl.dbPath)
	f.StringVar(&fl.modelPath, "model", "", modelUsage)
	f.StringVar(&fl.harness, "harness", "h0", "starting harness: a built-in name or a .star file")
	f.IntVar(&fl.replay, "replay", 0, "also train on kept samples of the last N weight steps, re-verified under the current harness (rsft only; 0: off)")
	f.StringVar(&fl.condition, "condition", "whale", "whale (alternate), or a baseline: "+strings.Join(engine.Conditions, ", ")+" (fast-slow needs --I 1)")
	f.IntVar(&fl.candidates, "candidates", 0, "harness candidates per iteration, M (preset default)")
	f.StringVar(&fl.proposer, "proposer", "fragment", "harness proposer: fragment (fragments steered by the incumbent's failures and past paired gains; never runs dry), mutation, grid or llm")
	f.StringVar(&fl.gridKnobs, "grid-knobs", "", "with --proposer grid: one or two SEARCH_SPACE knobs, comma separated")
	f.StringVar(&fl.proposerURL, "proposer-url", "", "with --proposer llm: an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
	f.StringVar(&fl.proposerModel, "proposer-model", "", "with --proposer llm: the model name to ask")
	jsonFlag(f, &fl.asJSON, "print the summary as one JSON object")
	f.BoolVar(&fl.sampleBF16, "sample-bf16", false, sampleBF16Usage)
	f.StringVar(&fl.fromCkpt, "from-checkpoint", "", "start from this kept checkpoint's weights and harness, with its run's configuration (see 'whale export')")
	fl.lora.register(f)
	fl.envf.register(f)
	fl.server.register(f)
	fl.server.registerFleet(f)
	fl.backend.register(f)
	new(tensorBoardFlag).register(f)
	fl.file.register(f, "the run's flags (and, in an [engine] table, settings no flag sets)")
}

// sampleBF16Usage is --sample-bf16's help, on whale run and whale bench
// rollouts.
const sampleBF16Usage = "sample rollouts from bfloat16 copies of the weights, refreshed after each weight step: half the bytes a decoded token reads, faster where decoding is memory-bound (few sequences on a model larger than the caches), not for a small model's batches; logits differ from float32's by ~1e-2, so the run differs; training stays float32"

// loraFlags are --lora-rank, --lora-alpha and --lora-targets, on whale
// run and on the workbench's new runs.
type loraFlags struct {
	rank    int
	alpha   float64
	targets string
	bf16    bool
}

func (fl *loraFlags) register(f *pflag.FlagSet) {
	f.IntVar(&fl.rank, "lora-rank", 0, "train LoRA adapters of this rank on the frozen model instead of all its weights (0: train every weight)")
	f.Float64Var(&fl.alpha, "lora-alpha", 0, "with --lora-rank: the adapters' term is scaled by alpha/rank (default 2·rank)")
	f.BoolVar(&fl.bf16, "lora-bf16-base", false, "with --lora-rank: hold the frozen weights in bfloat16 only (half their memory; rounded once, at the start; the adapters train in float32)")
	f.StringVar(&fl.targets, "lora-targets", "all", "with --lora-rank: projections that get adapters, comma separated among "+strings.Join(model.LoRATargets, ",")+", or all")
}

// config is the adapter configuration the flags give (nil without
// --lora-rank).
func (fl *loraFlags) config(flags *pflag.FlagSet) (*model.LoRAConfig, error) {
	if fl.rank == 0 {
		if flags.Changed("lora-alpha") || flags.Changed("lora-targets") || flags.Changed("lora-bf16-base") {
			return nil, usageError{errors.New("--lora-alpha, --lora-targets and --lora-bf16-base need --lora-rank")}
		}
		return nil, nil
	}
	if fl.rank < 0 {
		return nil, usageError{fmt.Errorf("--lora-rank %d: want a rank ≥ 1 (or 0 to train every weight)", fl.rank)}
	}
	targets, err := model.ParseLoRATargets(fl.targets)
	if err != nil {
		return nil, usageError{fmt.Errorf("--lora-targets: %w", err)}
	}
	alpha := fl.alpha
	if !flags.Changed("lora-alpha") {
		alpha = 2 * float64(fl.rank)
	}
	return &model.LoRAConfig{Rank: fl.rank, Alpha: alpha, Targets: targets, BF16Base: fl.bf16}, nil
}

// run is whale run: a new run (or one from a checkpoint), driven to its end.
func (fl *runFlags) run(cmd *cobra.Command) error {
	if err := fl.file.apply(cmd.Flags(), true); err != nil {
		return err
	}
	if !fl.headless {
		return usageError{errors.New("without --headless a run belongs to the workbench: use 'whale tui' (or add --headless)")}
	}
	if err := fl.server.check(cmd.Flags()); err != nil {
		return err
	}
	if err := fl.backend.open(); err != nil {
		return err
	}
	if fl.fromCkpt != "" {
		return runFromCheckpoint(cmd, fl.dbPath, fl.fromCkpt, fl.dataPath, fl.format, fl.asJSON)
	}
	if fl.domain == "" {
		return usageError{errors.New("--domain is required (" + strings.Join(domains.Names(), ", ") + ")")}
	}
	if (fl.dataPath == "") != (fl.format == "") {
		return usageError{errors.New("--data and --format go together")}
	}
	cfg, err := fl.config(cmd.Flags())
	if err != nil {
		return fl.file.locate(err)
	}
	ws, err := openWorkspace(fl.dbPath)
	if err != nil {
		return err
	}
	defer ws.Close()
	eng, _, err := newRunEngine(ws, cfg, fl.modelPath, fl.dataPath, fl.format, fl.envf.apply)
	var refused *engine.AuditRefusal
	if errors.As(err, &refused) && cfg.Harness != fl.harness {
		refused.Audit.Harness = "starting harness " + fl.harness // a file: name it, not its hash
		return errors.New(refused.Audit.Sentence())
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "run %s: %s, %s, %s, preset %s, db %s\n", eng.RunID, fl.domain, cfg.ScheduleName(), cfg.Operator, cfg.Preset, fl.dbPath)
	return drive(cmd, ws, eng, fl.asJSON)
}

// config is the preset with the flags the person set.
func (fl *runFlags) config(flags *pflag.FlagSet) (engine.Config, error) {
	cfg, err := engine.Preset(fl.preset, fl.domain)
	if err != nil {
		return cfg, usageError{err}
	}
	cfg.Seed = fl.seed
	if err := fl.file.applyEngine(&cfg); err != nil {
		return cfg, err
	}
	set := func(name string, apply func()) {
		if flags.Changed(name) {
			apply()
		}
	}
	set("schedule", func() { cfg.Schedule = fl.schedule })
	set("E", func() { cfg.E = fl.e })
	set("I", func() { cfg.I = fl.i })
	set("weights", func() { cfg.Operator = fl.op })
	// --budget alone turns the preset's two ledgers into one, as before
	// the ledgers were split; a ledger flag turns a preset's budget into
	// two ledgers (the other one 0 unless given).
	set("budget", func() { cfg.Budget, cfg.TrainCalls, cfg.SearchCalls = fl.budget, 0, 0 })
	if flags.Changed("train-calls") || flags.Changed("search-calls") {
		cfg.Budget, cfg.TrainCalls, cfg.SearchCalls = 0, 0, 0
		set("train-calls", func() { cfg.TrainCalls = fl.trainCalls })
		set("search-calls", func() { cfg.SearchCalls = fl.searchCalls })
		if flags.Changed("budget") {
			return cfg, usageError{errors.New("--budget (one ledger) and --train-calls/--search-calls (two ledgers) exclude each other")}
		}
	}
	set("rounds", func() { cfg.MaxRounds = fl.rounds })
	set("harness-calls", func() { cfg.HarnessCalls = fl.harnessCalls })
	set("harness-passes", func() { cfg.HarnessPasses = fl.harnessPasses })
	set("replay", func() { cfg.Replay = fl.replay })
	set("lr", func() { cfg.LR = fl.lr })
	set("kl", func() { cfg.KL = fl.kl })
	set("candidates", func() { cfg.Candidates = fl.candidates })
	cfg.SampleBF16 = fl.sampleBF16
	if cfg.LoRA, err = fl.lora.config(flags); err != nil {
		return cfg, err
	}
	if fl.condition != "whale" {
		cfg.Condition = fl.condition
	}
	cfg.Proposer, cfg.ProposerURL, cfg.ProposerModel = fl.proposer, fl.proposerURL, fl.proposerModel
	if fl.server.set() {
		cfg.PolicyServer = fl.server.config()
	}
	if fl.gridKnobs != "" {
		cfg.GridKnobs = strings.Split(fl.gridKnobs, ",")
	}
	if flags.Changed("harness") {
		if cfg.Harness, err = harnessArg(fl.harness, fl.domain); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// newRunEngine starts a new run of cfg in ws, from the model at modelPath
// (the embedded one if empty) over the domain's generated splits or its
// --data, opened with the model's data seed. whale run and the workbench
// start runs through it. tune, when set, adjusts the engine's Env
// (envFlags.apply) before the run starts.
func newRunEngine(ws *engine.Workspace, cfg engine.Config, modelPath, dataPath, format string, tune func(*engine.Env)) (*engine.Engine, *bundle.Bundle, error) {
	b, err := openModel(modelPath)
	if err != nil {
		return nil, nil, err
	}
	dom, err := runDomain(cfg.Domain, dataPath, format, b.DataSeed)
	if err != nil {
		return nil, nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageError{err}
	}
	env := engine.Env{Domain: dom, Bundle: b}
	if tune != nil {
		tune(&env)
	}
	eng, err := ws.NewRun(cfg, env)
	return eng, b, err
}

// resumeEveryFlag is --resume-every: how often a run writes a resume point
// between phase boundaries.
type resumeEveryFlag struct{ d time.Duration }

func (r *resumeEveryFlag) register(f *pflag.FlagSet) {
	f.DurationVar(&r.d, "resume-every", engine.DefaultResumeEvery, "write a resume point this often between phase boundaries (0: after every weight step and harness iteration); phase boundaries, commands and Ctrl-C always write one, and a run resumed from any point ends as the uninterrupted run would")
}

// envFlags are the flags of how a run uses the machine, which never change
// its results: --resume-every and --activation-mb.
type envFlags struct {
	resumeEvery  resumeEveryFlag
	activationMB int
}

func (e *envFlags) register(f *pflag.FlagSet) {
	e.resumeEvery.register(f)
	f.IntVar(&e.activationMB, "activation-mb", 0, "bound on a weight step's training activations in MiB, past which layers recompute their forward pass in the backward one: less memory, more CPU, the same results (0: 256; negative: keep every layer's)")
}

// apply sets the flags' fields of env.
func (e *envFlags) apply(env *engine.Env) {
	env.ResumeEvery = e.resumeEvery.env()
	env.ActivationBytes = activationBytes(e.activationMB)
}

// activationBytes is an --activation-mb value as
// model.TrainConfig.ActivationBytes: 0 stays 0 (the default), a negative
// value is -1 (no bound).
func activationBytes(mb int) int64 {
	if mb < 0 {
		return -1
	}
	return int64(mb) << 20
}

// env is the engine's Env.ResumeEvery for the flag (whose 0 means every step).
func (r *resumeEveryFlag) env() time.Duration {
	if r.d <= 0 {
		return -1
	}
	return r.d
}

// harnessArg turns --harness into what the engine stores: a built-in name
// as is, a file as its source.
func harnessArg(arg, domain string) (string, error) {
	if _, err := os.Stat(arg); err != nil {
		return arg, nil // a built-in name; the engine checks it
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return "", fmt.Errorf("--harness: %w", err)
	}
	return string(b), nil
}

// drive runs the engine to its end, printing progress lines from its
// events, and prints the summary; meanwhile other processes may watch the
// run (and steer it) through db's socket.
func drive(cmd *cobra.Command, ws *engine.Workspace, eng *engine.Engine, asJSON bool) error {
	db := ws.Store()
	ctx, stop := interruptible(cmd.Context())
	defer stop()
	srv := serveStore(cmd, db)
	defer srv.Close()
	defer srv.Add(eng.RunID, eng)()
	sub := eng.Subscribe(1024)
	done := make(chan struct{})
	log := cmd.ErrOrStderr()
	stopTB := tensorBoardOf(cmd).follow(db, log)
	bar := isTerminal(log)
	phases := 2 * eng.Cfg.MaxRounds
	go func() {
		defer close(done)
		ended := 0
		last := ""
		// On a terminal the bar also moves between events: the work in
		// flight (a val evaluation, a harness's scoring) with its
		// rollouts and ETA, redrawn every second.
		var tick <-chan time.Time
		if bar {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			tick = t.C
		}
		ready := sub.Ready()
		for {
			select {
			case <-tick:
				if last != "" {
					fmt.Fprintf(log, "\r\033[K%s", last+workText(eng.Progress(), time.Now()))
				}
				continue
			case _, ok := <-ready:
				if !ok {
					ready = nil
				}
			}
			if ready == nil {
				break
			}
			evs, dropped := sub.Drain()
			if dropped > 0 && !bar {
				fmt.Fprintf(log, "(%d events not shown)\n", dropped)
			}
			for _, ev := range evs {
				if ev.Kind == engine.EvPhaseEnded {
					ended++
				}
				if !bar {
					printEvent(log, ev)
					if ev.Kind == engine.EvPhaseEnded {
						fmt.Fprintf(log, "  %s\n", progressLedger(eng.Progress()))
					}
					continue
				}
				// On a terminal: phase boundaries as lines, the rest as
				// one bar redrawn in place.
				if ev.Kind == engine.EvPhaseEnded || ev.Kind == engine.EvRunFinished || ev.Kind == engine.EvControl {
					fmt.Fprint(log, "\r\033[K")
					printEvent(log, ev)
				}
				last = progressBar(ended, phases, ev)
				fmt.Fprintf(log, "\r\033[K%s", last+workText(eng.Progress(), time.Now()))
			}
		}
		if bar {
			fmt.Fprintln(log)
		}
	}()
	sum, err := eng.Run(ctx)
	<-done
	err = errors.Join(err, stopTB())
	if err != nil {
		if ctx.Err() != nil {
			// Ctrl-C is how a person stops a run: it stops at a resume
			// point, so the command succeeds after saying how to go on.
			if !errors.Is(err, context.Canceled) {
				fmt.Fprintf(log, "while stopping: %v\n", err)
			}
			fmt.Fprintf(log, "interrupted: a resume point holds the run up to its last completed step; continue with %s\n", resumeHint(eng.RunID, db.Path()))
			return nil
		}
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), sum)
	}
	printSummary(cmd.OutOrStdout(), sum)
	return nil
}

// printEvent prints one line for the events a headless run reports.
func printEvent(w io.Writer, ev engine.Event) {
	p, err := ev.Payload()
	if err != nil {
		fmt.Fprintf(w, "  (%v)\n", err)
		return
	}
	switch d := p.(type) {
	case engine.PhaseStartedData:
		fmt.Fprintf(w, "round %d: %s phase starts (%d model calls, %d rollouts so far)\n", ev.Round, ev.Phase, ev.Calls, ev.Rollouts)
	case engine.WeightStepData:
		fmt.Fprintf(w, "  step %d: reward %.3f, kept %d/%d, loss %.4f, entropy %.3f (phase %d/%d)\n", ev.Step, d.RewardMean, d.Stats.Kept, d.Stats.Rollouts, d.Stats.Loss, d.Entropy, d.Patience.Done, max(d.Patience.Min, d.Patience.Max))
	case engine.HarnessIterationData:
		mark := ""
		if d.Result.Changed {
			mark = " (new incumbent)"
		}
		mark += d.Result.StarvedText()
		fmt.Fprintf(w, "  iteration %d: %d candidates, best %.3f %s%s\n", ev.Iteration, len(d.Result.Candidates), d.Result.BestScore, engine.ShortHash(d.Result.Accepted), mark)
	case engine.PhaseRecord:
		allowance := ""
		if d.Allowance > 0 {
			allowance = fmt.Sprintf(" (of %d allowed)", d.Allowance)
		}
		fmt.Fprintf(w, "round %d: %s phase ends: val %.3f -> %.3f, pass-mean %+.3f -> %+.3f%s, %d model calls%s, %d rollouts\n", d.Round, d.Kind, d.ValBefore, d.ValAfter,
			d.ValPassBefore-d.ValBefore, d.ValPassAfter-d.ValAfter, d.HealthText(), d.Calls, allowance, d.Rollouts)
	case engine.JournaledCommand:
		line := "control: " + d.Kind
		if d.Target != "" {
			line += " " + engine.ShortHash(d.Target)
		}
		if d.Error != "" {
			line += " (refused: " + d.Error + ")"
		}
		fmt.Fprintln(w, line)
	case engine.Summary:
		fmt.Fprintln(w, "run finished")
	}
}

func printSummary(w io.Writer, s engine.Summary) {
	fmt.Fprintf(w, "run %s (%s, %s): %d rounds, %d model calls in %d rollouts (+%d calls in %d rollouts of evaluation)\n", s.RunID, s.Domain,
		engine.ScheduleName(s.Schedule, s.Condition), s.Rounds, s.ModelCalls, s.Rollouts, s.EvalCalls, s.EvalRollouts)
	fmt.Fprintf(w, "training calls %d + search calls %d = %d; test-time calls per test episode %.2f; kept samples per training call %.3f (chosen completions alone %.3f)\n",
		s.TrainCalls, s.SearchCalls, s.TrainCalls+s.SearchCalls, s.TestCallsPerEpisode, s.KeptPerCall, s.KeptPerCallChosen)
	fmt.Fprintf(w, "%-8s %5s %9s %9s %9s %9s %10s %8s %6s\n", "phase", "round", "calls", "rollouts", "val from", "val to", "pass-mean", "entropy", "kept")
	for _, p := range s.Phases {
		ent, kept := "-", "-"
		if p.Entropy != nil && p.KeptFraction != nil {
			ent, kept = fmt.Sprintf("%.3f", *p.Entropy), fmt.Sprintf("%.0f%%", 100**p.KeptFraction)
		}
		fmt.Fprintf(w, "%-8s %5d %9d %9d %9.3f %9.3f %+10.3f %8s %6s\n", p.Kind, p.Round, p.Calls, p.Rollouts, p.ValBefore, p.ValAfter, p.ValPassAfter-p.ValAfter, ent, kept)
	}
	if s.BestValMean8 != nil {
		fmt.Fprintf(w, "best val mean@8 %.3f; ", *s.BestValMean8)
	}
	fmt.Fprintf(w, "test mean@%d %.3f [%.3f, %.3f], pass@%d %.3f\n", s.TestK, s.TestMean8, s.TestCI95[0], s.TestCI95[1], s.TestK, s.TestPass8)
	fmt.Fprintf(w, "final harness %s, best checkpoint %s\n", engine.ShortHash(s.FinalHarness), s.BestCkpt)
}

// workspaceRuns reads the runs of the workspace at path: from the file,
// or, while another whale process holds it, from that process (which
// marks the runs it is running Live).
func workspaceRuns(path string) ([]attach.RunInfo, error) {
	ws, err := openExistingWorkspace(path)
	if err != nil {
		cl, aerr := attachTo(path, err)
		if aerr != nil {
			return nil, aerr
		}
		return cl.Runs()
	}
	defer ws.Close()
	runs, err := ws.Store().Runs()
	out := make([]attach.RunInfo, len(runs))
	for i, r := range runs {
		out[i] = attach.RunInfo{Run: r}
	}
	return out, err
}

// workspaceRun reads one run as workspaceRuns reads them all.
func workspaceRun(path, id string) (attach.RunInfo, error) {
	ws, err := openExistingWorkspace(path)
	if err != nil {
		cl, aerr := attachTo(path, err)
		if aerr != nil {
			return attach.RunInfo{}, aerr
		}
		return cl.Run(id)
	}
	defer ws.Close()
	v, err := ws.Load(id)
	if err != nil {
		return attach.RunInfo{}, err
	}
	return attach.RunInfo{Run: v.Run, Origin: v.Origin}, nil
}

func newRunsCmd() *cobra.Command {
	var dbPath string
	var asJSON bool
	c := &cobra.Command{
		Use:   "runs",
		Short: "List the runs in a workspace (also while another whale process holds it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := workspaceRuns(dbPath)
			if err != nil {
				return err
			}
			type row struct {
				RunID   string `json:"run_id"`
				Status  string `json:"status"`
				Domain  string `json:"domain"`
				Created string `json:"created"`
				// Live: the process holding the workspace runs it now.
				Live  bool   `json:"live,omitempty"`
				Owner string `json:"owner,omitempty"`
			}
			rows := []row{}
			for _, r := range runs {
				cfg, err := engine.DecodeConfig(r.ID, r.Config)
				if err != nil {
					return err
				}
				rows = append(rows, row{r.ID, r.State(), cfg.Domain, r.Created.Format(time.RFC3339), r.Live, r.Owner})
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rows)
			}
			for _, r := range rows {
				live := ""
				if r.Live {
					live = "  live in " + r.Owner
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-32s %-9s %-9s %s%s\n", r.RunID, r.Status, r.Domain, r.Created, live)
			}
			return nil
		},
	}
	dbFlag(c.Flags(), &dbPath)
	jsonFlag(c.Flags(), &asJSON, "print a JSON array")
	return c
}

func newShowCmd() *cobra.Command {
	var dbPath string
	var asJSON, asConfig bool
	c := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: status, phases so far, its summary when finished (also while another whale process runs it)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := workspaceRun(dbPath, args[0])
			if err != nil {
				return err
			}
			if asConfig {
				return printRunConfig(cmd.OutOrStdout(), info.ID, info.Config)
			}
			return showRun(cmd, info, dbPath, asJSON)
		},
	}
	dbFlag(c.Flags(), &dbPath)
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	c.Flags().BoolVar(&asConfig, "config", false, "print the run's configuration as a TOML file that 'whale run --headless --config FILE' reads back to the same run")
	return c
}

// showRun prints what 'whale show' says of a run.
func showRun(cmd *cobra.Command, info attach.RunInfo, dbPath string, asJSON bool) error {
	r, origin := info.Run, info.Origin
	cfg, st, err := engine.DecodeRun(r)
	if err != nil {
		return err
	}
	resumable := !info.Live && engine.RunView{Run: r, Config: cfg}.Resumable()
	out := map[string]any{"run_id": r.ID, "status": info.State(), "config": r.Config, "resumable": resumable,
		"round": st.Round, "phase": st.Phase, "step": st.Step, "iteration": st.Iteration, "ledger": st.Ledger, "phases": st.Phases, "summary": st.Summary,
		"compute_s": r.Compute.Seconds(), "servers": st.Servers}
	if origin != nil {
		out["from_checkpoint"] = origin
	}
	if info.Owner != "" {
		out["live"], out["owner"] = info.Live, info.Owner
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), out)
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "run %s: %s, round %d, %s phase, step %d, iteration %d\n", r.ID, info.State(), st.Round, st.Phase, st.Step, st.Iteration)
	if info.Live {
		fmt.Fprintf(w, "live in %s (as of its last resume point): whale tui --run %s%s attaches to it\n", info.Owner, r.ID, dbArg(dbPath))
	}
	if origin != nil {
		fmt.Fprintf(w, "from checkpoint %s (run %s, round %d %s)\n", origin.Checkpoint, origin.Run, origin.Round, origin.Phase)
	}
	if lc := cfg.LoRA; lc != nil {
		fmt.Fprintf(w, "LoRA: rank %d, alpha %g on %s; frozen weights %s\n", lc.Rank, lc.Alpha, strings.Join(lc.Targets, ", "), engine.ShortHash(cfg.Base))
	}
	l := st.Ledger
	fmt.Fprintf(w, "model calls: %s; evaluation %d (spends no ledger)\n", cfg.LedgerText(l), l.EvalCalls)
	fmt.Fprintf(w, "rollouts: train %d, search %d, evaluation %d\n", l.Train, l.Search, l.Eval)
	if r.Compute > 0 {
		fmt.Fprintf(w, "compute: %s (the stored work, over every process that ran it)\n", r.Compute.Round(time.Second))
	}
	if st.Servers != nil {
		for _, line := range st.Servers.Lines() {
			fmt.Fprintln(w, line+" (as of the last resume point)")
		}
	}
	if st.Summary != nil {
		printSummary(w, *st.Summary)
	} else if resumable {
		fmt.Fprintf(w, "resumable: whale resume %s --headless%s\n", r.ID, dbArg(dbPath))
	}
	return nil
}

func newResumeCmd() *cobra.Command {
	var dbPath, dataPath, format, modelPath, policyURL string
	var headless, asJSON bool
	var lr float64
	var envf envFlags
	var backend backendFlag
	c := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue a run from its last resume point (a finished run prints its summary)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := backend.open(); err != nil {
				return err
			}
			ws, v, err := openRun(dbPath, args[0])
			if err != nil {
				return err
			}
			defer ws.Close()
			r, cfg := v.Run, v.Config
			if !headless && r.Status != "finished" {
				return usageError{errors.New("without --headless a run resumes in the workbench: use 'whale tui --run RUN' (or add --headless)")}
			}
			if cmd.Flags().Changed("lr") || policyURL != "" {
				if cmd.Flags().Changed("lr") && !(lr > 0) {
					return usageError{fmt.Errorf("--lr %v: want a positive learning rate", lr)}
				}
				if cfg, err = ws.Amend(r.ID, engine.Amendment{LR: lr, PolicyURL: policyURL}); err != nil {
					return err
				}
			}
			dom, err := runDomain(cfg.Domain, dataPath, format, cfg.DataSeed)
			if err != nil {
				return err
			}
			// The run's model configuration and tokenizer come back from
			// the store.
			env := engine.Env{Domain: dom}
			envf.apply(&env)
			var eng *engine.Engine
			if modelPath != "" {
				if len(r.Cursor) > 0 {
					return usageError{fmt.Errorf("run %s resumes from its last resume point, which holds its weights: drop --model (it names the starting model of a run stopped before its first resume point)", r.ID)}
				}
				eng, err = ws.ResumeMoved(r.ID, env, modelPath)
			} else {
				eng, err = ws.Resume(r.ID, env)
			}
			if err != nil {
				return err
			}
			return drive(cmd, ws, eng, asJSON)
		},
	}
	f := c.Flags()
	dbFlag(f, &dbPath)
	headlessFlag(f, &headless)
	f.StringVar(&dataPath, "data", "", "the --data the run was started with")
	f.StringVar(&format, "format", "", "the --format the run was started with")
	f.StringVar(&modelPath, "model", "", "where the starting model file or folder is now, for a run stopped before its first resume point whose --model moved (its sha256 is checked)")
	jsonFlag(f, &asJSON, "print the summary as one JSON object")
	f.Float64Var(&lr, "lr", 0, "continue with this learning rate (stored in the run's config), e.g. after a run stopped on a non-finite step")
	f.StringVar(&policyURL, "policy-url", "", "a server-policy run: the server's endpoint now, when it moved (stored in the run's config)")
	envf.register(f)
	backend.register(f)
	new(tensorBoardFlag).register(f)
	return c
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar renders the run's progress: phases ended out of the run's
// phases (when the rounds bound it), then where it is now.
// workText is the bar's tail: the work in flight with its rollouts and
// ETA, and the budget used and left.
func workText(p engine.Progress, now time.Time) string {
	s := ""
	if p.Total > 0 && p.Done < p.Total {
		s = fmt.Sprintf("  %s %d/%d", p.What, p.Done, p.Total)
		if d, ok := p.ETA(now); ok {
			s += ", ETA " + d.Round(time.Second).String()
		}
	}
	switch l := p.Ledger; {
	case p.TwoLedgers():
		s += fmt.Sprintf("  training %d left, search %d left", max(0, p.TrainCalls-l.TrainCalls), max(0, p.SearchCalls-l.SearchCalls))
	case p.Budget > 0:
		s += fmt.Sprintf("  budget %d left", max(0, p.Budget-l.Budgeted()))
	}
	return s
}

// progressLedger is the run's ledger per purpose against its budget.
func progressLedger(p engine.Progress) string {
	l := p.Ledger
	s := fmt.Sprintf("ledger: training %d, search %d model calls", l.TrainCalls, l.SearchCalls)
	switch {
	case p.TwoLedgers():
		s = "ledger: " + p.LedgerText()
	case p.Budget > 0:
		s += fmt.Sprintf(" (budget %d: %d used, %d left)", p.Budget, l.Budgeted(), max(0, p.Budget-l.Budgeted()))
	}
	return s + fmt.Sprintf("; evaluation %d apart", l.EvalCalls)
}

func progressBar(ended, phases int, ev engine.Event) string {
	const width = 24
	bar := ""
	if phases > 0 {
		n := min(width, ended*width/phases)
		bar = "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + fmt.Sprintf("] %d/%d phases  ", ended, phases)
	}
	where := fmt.Sprintf("round %d %s", ev.Round, ev.Phase)
	switch ev.Phase {
	case engine.PhaseWeights:
		where += fmt.Sprintf(" step %d", ev.Step)
	case engine.PhaseHarness:
		where += fmt.Sprintf(" iteration %d", ev.Iteration)
	}
	return fmt.Sprintf("%s%s  %d model calls, %d rollouts", bar, where, ev.Calls, ev.Rollouts)
}
