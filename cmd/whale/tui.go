package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"whale/core/attach"
	"whale/core/bundle"
	"whale/core/ckpt"
	"whale/core/engine"
	"whale/core/model"
	"whale/core/store"
	"whale/data"
	"whale/data/domains"
	"whale/tui"
	"whale/tui/keymap"
)

func init() { register(newTUICmd) }

// tuiFlags are what `whale tui` (and `whale` on a terminal) start from.
type tuiFlags struct {
	db, domain, preset, run, model string
	fresh                          bool
	// readOnly opens the run to watch only; steer lets a viewer steer a
	// run whose owner serves it read-only (a bench).
	readOnly, steer bool
	seed            uint64
	sampleBF16      bool
	lora            loraFlags
	// loraCfg is what --lora-rank and its companions give a new run
	// (checked before anything opens).
	loraCfg *model.LoRAConfig
	// keysPath is --keys (""; $XDG_CONFIG_HOME/whale/keys.toml); keys
	// are what it gives (checked before anything opens).
	keysPath string
	keys     *keymap.Map
}

func newTUICmd() *cobra.Command {
	var fl tuiFlags
	c := &cobra.Command{
		Use:   "tui [--db F] [--domain D] [--preset P] [--model M] [--run ID] [--keys FILE]",
		Short: "Open the workbench: watch and steer a run (new, or resume --run / the newest unfinished one)",
		Long: "Opens the terminal workbench on a run: the phase timeline, patience, harness leaderboard,\n" +
			"rejected samples, checkpoints and event log, with keys to force a phase switch, pause and prune.\n" +
			"Without --run it offers to resume the newest unfinished run in --db, else starts a new run with\n" +
			"the embedded model (or --model). q quits at once; 'whale tui --run ID' or 'whale resume ID --headless' continues later.\n" +
			"When another whale process (a run, a workbench, a bench) holds --db, --run ID attaches to that\n" +
			"run: its events stream from the owner, commands go to it, and q leaves it running. A bench's runs\n" +
			"are read-only to viewers unless --steer (the bench marks a steered run); --read-only watches any run.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if fl.loraCfg, err = fl.lora.config(cmd.Flags()); err != nil {
				return err
			}
			if fl.loraCfg != nil && fl.run != "" {
				return usageError{errors.New("--lora-rank sizes a new run's adapters: a resumed run (--run) keeps its own")}
			}
			if fl.readOnly && fl.steer {
				return usageError{errors.New("--read-only and --steer contradict each other: pick one")}
			}
			if (fl.readOnly || fl.steer) && fl.run == "" {
				return usageError{errors.New("--read-only and --steer apply to a run named with --run ID")}
			}
			if fl.sampleBF16 && fl.run != "" {
				return usageError{errors.New("--sample-bf16 configures a new run: a resumed run (--run) keeps its own")}
			}
			if fl.keys, err = workbenchKeys(fl.keysPath); err != nil {
				return err
			}
			return openWorkbench(cmd, fl)
		},
	}
	f := c.Flags()
	dbFlag(f, &fl.db)
	f.StringVar(&fl.domain, "domain", "math", "domain of a new run: "+strings.Join(domains.Names(), ", "))
	f.StringVar(&fl.preset, "preset", "small", "size of a new run: "+strings.Join(engine.PresetNames(), ", "))
	f.StringVar(&fl.run, "run", "", "resume this run instead of starting one")
	f.BoolVar(&fl.fresh, "new", false, "start a new run even if an unfinished one could be resumed")
	f.Uint64Var(&fl.seed, "seed", 1, "seed of a new run")
	f.StringVar(&fl.model, "model", "", "starting model of a new run: a whale model file or a Hugging Face folder (default: the embedded base model)")
	f.BoolVar(&fl.sampleBF16, "sample-bf16", false, "new run: "+sampleBF16Usage)
	f.BoolVar(&fl.readOnly, "read-only", false, "watch --run ID without steering it (nothing is run or changed)")
	f.BoolVar(&fl.steer, "steer", false, "steer --run ID although its owner (a bench) serves it read-only; the bench records that it was steered")
	f.StringVar(&fl.keysPath, "keys", "", "the workbench's keys: a keys.toml (default $XDG_CONFIG_HOME/whale/keys.toml)")
	fl.lora.register(f)
	new(tensorBoardFlag).register(f)
	return c
}

// noTerminal says what the workbench would have done and how to run
// without it; it is an error (exit 1), not a usage error.
func noTerminal(fl tuiFlags) error {
	if fl.readOnly {
		return fmt.Errorf("stdout is not a terminal: the workbench would show run %s in %s read-only; %s reports it without one", fl.run, fl.db, showHint(fl.run, fl.db))
	}
	adapters, extra := "", ""
	if fl.model != "" {
		extra += " --model " + fl.model
	}
	if fl.seed != 1 {
		extra += fmt.Sprintf(" --seed %d", fl.seed)
	}
	if c := fl.loraCfg; c != nil {
		adapters = fmt.Sprintf(" with LoRA adapters of rank %d", c.Rank)
		extra += fmt.Sprintf(" --lora-rank %d --lora-alpha %g --lora-targets %s", c.Rank, c.Alpha, fl.lora.targets)
		if c.BF16Base {
			adapters += " over a bfloat16 base"
			extra += " --lora-bf16-base"
		}
	}
	if fl.sampleBF16 {
		adapters += ", sampling from bfloat16 weights,"
		extra += " --sample-bf16"
	}
	what := fmt.Sprintf("start a new %s run (preset %s)%s in %s, or offer to resume its newest unfinished run", fl.domain, fl.preset, adapters, fl.db)
	if fl.run != "" {
		what = fmt.Sprintf("resume run %s in %s", fl.run, fl.db)
	}
	return fmt.Errorf("stdout is not a terminal: the workbench would %s.\n"+
		"Run headless instead: whale run --headless --domain %s --preset %s%s --db %s (or whale resume RUN --headless --db %s)",
		what, fl.domain, fl.preset, extra, fl.db, fl.db)
}

// defaultWorkbench is `whale` with no arguments: the workbench with the
// defaults of `whale tui`.
func defaultWorkbench(cmd *cobra.Command) error {
	ks, err := workbenchKeys("")
	if err != nil {
		return err
	}
	return openWorkbench(cmd, tuiFlags{db: "whale.db", domain: "math", preset: "small", seed: 1, keys: ks})
}

// askYes asks a yes/no question on w, reading one line from r; an empty
// answer is yes.
func askYes(r io.Reader, w io.Writer, q string) bool {
	fmt.Fprintf(w, "%s [Y/n] ", q)
	line, _ := bufio.NewReader(r).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "" || a == "y" || a == "yes"
}

func openWorkbench(cmd *cobra.Command, fl tuiFlags) (err error) {
	if !isTerminal(cmd.OutOrStdout()) {
		return noTerminal(fl)
	}
	if fl.readOnly {
		// Watching never creates a workspace.
		if _, err := os.Stat(fl.db); err != nil {
			return fmt.Errorf("--db %s: no workspace there (%v): name the file that holds run %s", fl.db, err, fl.run)
		}
	}
	ws, err := openWorkspace(fl.db)
	if err != nil {
		return attachedWorkbench(cmd, fl, err)
	}
	defer ws.Close()
	db := ws.Store()
	stopTB := tensorBoardOf(cmd).follow(db, cmd.ErrOrStderr())
	defer func() { err = errors.Join(err, stopTB()) }()
	srv := serveStore(cmd, db)
	defer srv.Close()
	runID := fl.run
	if runID == "" && !fl.fresh {
		id, err := ws.NewestUnfinished()
		if err != nil {
			return err
		}
		if id != "" && askYes(cmd.InOrStdin(), cmd.ErrOrStderr(), fmt.Sprintf("resume unfinished run %s?", id)) {
			runID = id
		}
	}
	var eng *engine.Engine
	var history []engine.Event
	modelDesc := "embedded base model"
	if runID != "" {
		v, err := ws.Load(runID)
		if err != nil {
			return err
		}
		if v.Run.Status == "finished" || fl.readOnly {
			return watchStored(cmd, ws, v, fl)
		}
		dom, err := runDomain(v.Config.Domain, "", "", v.Config.DataSeed)
		if err != nil {
			return err
		}
		// The run's model configuration and tokenizer come back from the
		// store.
		if eng, err = ws.Resume(runID, engine.Env{Domain: dom}); err != nil {
			return err
		}
		modelDesc = "resumed weights"
		if history, err = v.Events(0, 0); err != nil {
			return err
		}
	} else {
		if !slices.Contains(domains.Names(), fl.domain) {
			return usageError{fmt.Errorf("--domain %q: want one of %s", fl.domain, strings.Join(domains.Names(), ", "))}
		}
		cfg, err := engine.Preset(fl.preset, fl.domain)
		if err != nil {
			return usageError{err}
		}
		cfg.Seed, cfg.LoRA, cfg.SampleBF16 = fl.seed, fl.loraCfg, fl.sampleBF16
		var b *bundle.Bundle
		if eng, b, err = newRunEngine(ws, cfg, fl.model, "", "", nil); err != nil {
			return err
		}
		if fl.model != "" {
			modelDesc = b.Name
		}
		if c := fl.loraCfg; c != nil {
			modelDesc += fmt.Sprintf(" + LoRA rank %d", c.Rank)
		}
	}
	for {
		forkID, err := workbench(cmd, ws, srv, eng, history, modelDesc, fl.keys)
		if err != nil || forkID == "" {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "starting a new run from checkpoint %s…\n", forkID)
		if eng, err = forkRun(ws, forkID, "", ""); err != nil {
			return err
		}
		v, err := ws.Load(eng.RunID)
		if err != nil {
			return err
		}
		if history, err = v.Events(0, 0); err != nil {
			return err
		}
		modelDesc = "weights of " + forkID
	}
}

// workbench shows eng's run until the person quits or picks a checkpoint
// to start a new run from (returned); either way eng has stopped at its
// last resume point, or finished, when it returns.
func workbench(cmd *cobra.Command, ws *engine.Workspace, srv *attach.Server, eng *engine.Engine, history []engine.Event, modelDesc string, keys *keymap.Map) (string, error) {
	db := ws.Store()
	// Subscribe before the engine starts so that no event is missed.
	sub := eng.Subscribe(4096)
	defer srv.Add(eng.RunID, eng)()
	done := make(chan error, 1)
	forkID := ""
	// The tea.Cmd that runs the engine may start after the program has
	// ended (q at once); closed stops it from starting then.
	var mu sync.Mutex
	started, closed := false, false
	m := tui.New(tui.Options{
		RunID: eng.RunID, Domain: eng.Cfg.Domain, ModelDesc: modelDesc, Schedule: eng.Cfg.ScheduleName(),
		Preset: eng.Cfg.Preset, Budget: eng.Cfg.TotalBudget(), Rounds: eng.Cfg.MaxRounds,
		Events: sub, Control: eng, History: history, Samples: storeSamples(db, eng.RunID), Progress: eng.Progress, Gold: eng.Gold(),
		HarnessSource: harnessSource(db),
		Fork:          func(id string) { forkID = id },
		Keys:          keys,
		Export: func(id string) (string, error) {
			dir := filepath.Join("export", strings.ReplaceAll(id, "/", "_"))
			_, err := engine.ExportCheckpoint(db, id, dir, ckpt.F32, engine.ExportWhale, 0)
			return dir, err
		},
		Run: func(ctx context.Context) error {
			mu.Lock()
			if closed {
				mu.Unlock()
				return context.Canceled
			}
			started = true
			mu.Unlock()
			_, err := eng.Run(ctx)
			done <- err
			return err
		},
	})
	_, perr := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(cmd.Context())).Run()
	m.Stop()
	mu.Lock()
	closed = true
	wait := started
	mu.Unlock()
	if wait {
		// The engine stops at its next check of the context and keeps its
		// last resume point; the store closes only after it has stopped.
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(cmd.ErrOrStderr(), "run %s: %v\n", eng.RunID, err)
		}
	}
	if perr != nil && !errors.Is(perr, tea.ErrProgramKilled) {
		return "", fmt.Errorf("tui: %w", perr)
	}
	st := eng.State()
	if st.Done {
		fmt.Fprintf(cmd.ErrOrStderr(), "run %s finished: %s reports it\n", eng.RunID, showHint(eng.RunID, db.Path()))
	} else {
		fmt.Fprintf(cmd.ErrOrStderr(), "run %s stopped at its last resume point: %s continues it\n", eng.RunID, resumeHint(eng.RunID, db.Path()))
	}
	return forkID, nil
}

// attachedWorkbench opens the workbench on a run of a workspace another
// whale process holds (openErr is why it could not be opened here): the
// owner streams the run's events and, while it runs the run, takes its
// commands. q leaves the owner running.
func attachedWorkbench(cmd *cobra.Command, fl tuiFlags, openErr error) error {
	cl, err := attachTo(fl.db, openErr)
	if err != nil {
		return err
	}
	if fl.run == "" {
		return usageError{fmt.Errorf("%s is held by another whale process (%s): name a run to attach to with --run ID, or use another --db", fl.db, liveRunIDs(cl))}
	}
	info, err := cl.Run(fl.run)
	if err != nil {
		return err
	}
	cfg, err := engine.DecodeConfig(info.ID, info.Config)
	if err != nil {
		return err
	}
	st, err := cl.Follow(fl.run, 0, 4096)
	if err != nil {
		return err
	}
	defer st.Close()
	ctl, readOnly, mode := viewerControl(cl, info, st.Live, fl)
	progress, stopProgress := pollProgress(cl, fl.run, st.Live)
	defer stopProgress()
	m := tui.New(tui.Options{
		RunID: fl.run, Domain: cfg.Domain, ModelDesc: mode + " (owner " + info.Owner + ")", Schedule: cfg.ScheduleName(),
		Preset: cfg.Preset, Budget: cfg.TotalBudget(), Rounds: cfg.MaxRounds,
		Events: st.Sub, Control: ctl, ReadOnly: readOnly, History: st.History, Gold: goldOf(cfg), Progress: progress,
		Samples: tui.SampleLoader(fl.run, func(fn func(seq uint64, rec []byte) error) error {
			recs, err := cl.Samples(fl.run, tui.MaxSamples)
			for _, r := range recs {
				if err := fn(r.Seq, r.Rec); err != nil {
					return err
				}
			}
			return err
		}),
		HarnessSource: func(hash string) (string, error) {
			h, err := cl.Harness(hash)
			return h.Source, err
		},
		Attached: mode, StreamEnd: st.End, Keys: fl.keys,
	})
	_, perr := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(cmd.Context())).Run()
	if perr != nil && !errors.Is(perr, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", perr)
	}
	if st.Live {
		fmt.Fprintf(cmd.ErrOrStderr(), "left run %s running in %s\n", fl.run, info.Owner)
	}
	return nil
}

// watchStored opens a stored run that nobody runs to read only: a
// finished run, or one named with --read-only. Nothing runs and nothing
// in the workspace changes; export still writes a checkpoint out of it.
func watchStored(cmd *cobra.Command, ws *engine.Workspace, v engine.RunView, fl tuiFlags) error {
	r, cfg, db := v.Run, v.Config, ws.Store()
	history, err := v.Events(0, 0)
	if err != nil {
		return err
	}
	why, state := "opened with --read-only", "stored, not running"
	if r.Status == "finished" {
		why, state = "the run has finished: there is nothing left to steer", "finished"
	}
	m := tui.New(tui.Options{
		RunID: r.ID, Domain: cfg.Domain, ModelDesc: "stored run", Schedule: cfg.ScheduleName(),
		Preset: cfg.Preset, Budget: cfg.Budget, Rounds: cfg.MaxRounds, History: history,
		Samples:       tui.SampleLoader(r.ID, func(fn func(seq uint64, rec []byte) error) error { return v.Samples(0, fn) }),
		HarnessSource: v.HarnessSource, ReadOnly: why, Status: state, Gold: goldOf(cfg),
		Keys: fl.keys,
		Export: func(id string) (string, error) {
			dir := filepath.Join("export", strings.ReplaceAll(id, "/", "_"))
			_, err := engine.ExportCheckpoint(db, id, dir, ckpt.F32, engine.ExportWhale, 0)
			return dir, err
		},
	})
	_, perr := tea.NewProgram(m, tea.WithAltScreen(), tea.WithContext(cmd.Context())).Run()
	if perr != nil && !errors.Is(perr, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", perr)
	}
	return nil
}

// pollProgress asks the owner for the run's work in flight once a second,
// off the screen's goroutine (Update never waits on a socket); the
// workbench reads the latest answer. nil when the owner is not running
// the run or does not answer.
func pollProgress(cl *attach.Client, run string, live bool) (func() engine.Progress, func()) {
	if !live {
		return nil, func() {}
	}
	first, err := cl.Progress(run)
	if err != nil {
		return nil, func() {}
	}
	var mu sync.Mutex
	last := first
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if p, err := cl.Progress(run); err == nil {
				mu.Lock()
				last = p
				mu.Unlock()
			}
		}
	}()
	return func() engine.Progress {
		mu.Lock()
		defer mu.Unlock()
		return last
	}, func() { close(stop) }
}

// goldOf returns the gold answers of a run's tasks for the sample
// inspector of a run this process does not run: its domain is generated
// again from the run's data seed (once, on first use). A domain that does
// not open (one imported with --data) leaves the answers unknown.
func goldOf(cfg engine.Config) func(taskID string) (string, bool) {
	var once sync.Once
	var answers map[string]string
	return func(id string) (string, bool) {
		once.Do(func() {
			answers = map[string]string{}
			dom, err := runDomain(cfg.Domain, "", "", cfg.DataSeed)
			if err != nil {
				return
			}
			for _, split := range []string{data.SplitTrain, data.SplitVal, data.SplitAudit, data.SplitTest} {
				ts, err := dom.Tasks(split)
				if err != nil {
					continue
				}
				for _, t := range ts {
					answers[t.ID] = t.Answer
				}
			}
		})
		a, ok := answers[id]
		return a, ok
	}
}

// viewerControl is what a viewer of a run another process owns may do:
// where its commands go, why it may not steer ("" when it may) and the
// footer's word for it. A run the owner is not running, one opened with
// --read-only, and one whose owner serves it read-only (a bench) without
// --steer are watched only.
func viewerControl(cl *attach.Client, info attach.RunInfo, live bool, fl tuiFlags) (tui.Controller, string, string) {
	ctl := attach.Control{Client: cl, Run: fl.run, Steer: fl.steer}
	switch {
	case !live:
		return ctl, "the owner (" + info.Owner + ") is not running this run: there is nothing to steer", "attached, read-only"
	case fl.readOnly:
		return ctl, "opened with --read-only", "attached, read-only"
	case info.ReadOnly && !fl.steer:
		kind := info.OwnerKind
		if kind == "" {
			kind = "owner"
		}
		return ctl, fmt.Sprintf("run %s belongs to a %s (%s); 'whale tui --run %s%s --steer' steers it, and the %s records that",
			fl.run, kind, info.Owner, fl.run, dbArg(fl.db), kind), "attached, read-only"
	case fl.steer:
		return ctl, "", "attached, steering"
	}
	return ctl, "", "attached"
}

// harnessSource reads a stored harness's source (the workbench's diff).
func harnessSource(db *store.DB) func(hash string) (string, error) {
	return func(hash string) (string, error) {
		h, err := db.GetHarness(hash)
		return h.Source, err
	}
}

// storeSamples is a loader of run's samples from db, newest first (the
// workbench's Samples pane, run in a tea.Cmd).
func storeSamples(db *store.DB, run string) func() ([]tui.Sample, error) {
	return tui.SampleLoader(run, func(fn func(seq uint64, rec []byte) error) error { return db.Samples(run, 0, fn) })
}
