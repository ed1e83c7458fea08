package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/model"
	"whale/core/policy"
	"whale/core/remote"
	"whale/core/search"
	"whale/core/store"
	"whale/core/weights"
	"whale/data"
	"whale/harnesses"
	"whale/kernels"
)

// Env is what a run runs on; cmd wires it (through a Workspace, which
// sets Store).
type Env struct {
	Domain data.Domain
	// Bundle is the model the run starts from with everything that
	// belongs to it: its tokenizer (the local policy renders rollouts'
	// chats with it, the null audit fits its chats with it), the
	// tokenizer.json a new run stores, and the generation settings it
	// records. A new run needs one. Resume and Fork may leave it nil: the
	// model is then built from the run's stored configuration, and the
	// run's own tokenizer is read back from the store (Config.Tokenizer).
	Bundle *bundle.Bundle
	Store  *store.DB
	// Policy samples rollouts; nil means Config.PolicyServer's (with the
	// key in remote.APIKeyEnv) where the run has one, else the chat policy
	// of the model over the run's template (chat.NewLocalWith: the normal
	// case, rollouts come
	// from the weights being trained).
	Policy policy.Policy
	// ResumeEvery is how often the run writes a resume point between
	// phase boundaries: 0 means DefaultResumeEvery, negative after every
	// weight step and harness iteration. Phase boundaries, applied control
	// commands, the end and an interruption (a cancelled context) always
	// write one. Every step is a function of the seed and the state, so a
	// run resumed from any point ends as the uninterrupted run does.
	ResumeEvery time.Duration
	// ActivationBytes bounds a weight step's training activations
	// (model.TrainConfig.ActivationBytes: 0 means the model's default,
	// negative none). Past it layers recompute their forward pass: more
	// CPU, less memory, the same results.
	ActivationBytes int64
}

// Command is a control command from a person (TUI or CLI).
type Command struct {
	// Kind is force (end the running phase now), pause, resume, prune,
	// unprune, freeze or unfreeze.
	Kind string `json:"kind"`
	// Target is the harness hash (prune, unprune) or knob (freeze,
	// unfreeze).
	Target string `json:"target,omitempty"`
	// ForPhase and ForRound name the phase a force was meant for: the one
	// on the person's screen when they pressed the key. A force that
	// reaches the engine after that phase ended is refused (journaled
	// with its reason), never applied to the phase that followed. Empty:
	// the running phase, whichever it is.
	ForPhase Phase `json:"for_phase,omitempty"`
	ForRound int   `json:"for_round,omitempty"`
}

// ErrPhaseEnded is wrapped by a force whose phase (Command.ForPhase,
// ForRound) had ended when the engine took the command.
var ErrPhaseEnded = errors.New("phase already ended")

// JournaledCommand is a control command as the store keeps it, with the
// point at which it took effect; it is also EvControl's payload.
type JournaledCommand struct {
	Command
	Step      int    `json:"step"`
	Iteration int    `json:"iteration"`
	Phase     Phase  `json:"phase"`
	Error     string `json:"error,omitempty"`
}

// Engine runs one WHALE run.
type Engine struct {
	RunID string
	Cfg   Config
	env   Env
	pol   policy.Policy
	// model is the run's model (Env.Bundle's, or built from the stored
	// configuration); tmpl is the chat template of the run's tokenizer.
	model *model.Model
	tmpl  *chat.Template
	// fleet, for a LoRA run with weight phases sampled by servers, is
	// pol (fleet.go).
	fleet *fleet

	trainer *model.Trainer
	op      weights.Optimizer
	ref     *model.Model // DPO/GRPO reference: weights at the phase start

	st    State
	train []data.Task
	val   []data.Task
	audit []data.Task
	test  []data.Task

	harnessCache map[string]*harnesses.Harness
	// inFlight bounds the requests a harness run keeps in flight
	// (harnesses.RunOptions.BatchSize): SampleWidth for the local model,
	// 0 (every rollout's) for any other policy. Submitted all at once, an
	// evaluation's first turns queue ahead of every later turn, and by
	// the time a later turn is admitted the prefix cache has evicted the
	// turn before it, so its whole prompt is computed again; with no more
	// in flight than the model decodes, a rollout's next turn is admitted
	// in the step after its last one ended and copies that one's keys and
	// values instead. A completion depends only on its request, so the
	// bound changes no trajectory.
	inFlight int
	// laned says the policy is the local model, which may decode in
	// lanes (Lanes in width.go).
	laned bool
	// The null-policy audit's policy, tasks and h0 score (null.go),
	// set on first use.
	nullPol   policy.Policy
	nullAudit []data.Task
	nullBase  *float64
	// startAudit is the audit's verdict on the starting harness (nil
	// for h0 or a domain without a null policy), kept on its entry.
	startAudit *NullAudit
	// saved are the weights, optimizer and phase-start blobs of the last
	// resume point, deleted when a newer point no longer uses them.
	saved [3]string
	// traces are recent failures of the incumbent, for the LLM proposer.
	traces  []string
	broker  *Broker[Event]
	control chan Command
	// prog is the work in flight, for screens (Progress).
	prog progress

	// clock is when the work toward the next resume point began (zero
	// outside Run): saveResume adds the time since to the run's compute
	// time.
	clock time.Time

	// stopAfter, if set, is asked after every weight step, harness
	// iteration or phase boundary (and the resume point it may have
	// written) whether to stop as if killed there (tests of resume).
	stopAfter func(State) bool

	// resumeEvery is Env.ResumeEvery resolved; lastSave when the last
	// resume point was written. dirty says the weights or optimizer state
	// changed since they were last stored; snap is the state after the
	// last completed step (see saveOnCancel).
	resumeEvery time.Duration
	lastSave    time.Time
	dirty       bool
	snap        []byte
	// times accumulates Timings; storeDepth keeps nested store timers
	// from counting twice.
	times      Timings
	storeDepth int
	// lastPerTask is the last evaluation's mean reward per task (bookEval),
	// read by testReport right after it.
	lastPerTask map[string]float64
}

// errStopped is returned by Run when stopAfter asked it to stop.
var errStopped = errors.New("engine: stopped by test hook")

// New starts a run of env.Bundle's model: it checks cfg, records the run
// in the store before anything else happens (with the bundle's tokenizer
// file and generation settings), and stores the starting weights. With
// cfg.LoRA it stores the model's weights as the frozen base and enables
// the adapters on the model. Workspace.NewRun is how runs are made; New
// is its step that takes the run id as given.
func New(cfg Config, env Env, runID string) (*Engine, error) {
	b := env.Bundle
	if b == nil {
		return nil, errors.New("engine: a new run needs a model (Env.Bundle)")
	}
	cfg.Tokenizer, cfg.Generation = tokenizerHash(b.TokenizerJSON), generationOf(b)
	return newRun(cfg, env, b.Model, b.TokenizerJSON, runID)
}

// newRun is New for model m, whose tokenizer cfg already names (a fork's is
// the store's, tokJSON nil; a new run's is its bundle's, tokJSON its file).
func newRun(cfg Config, env Env, m *model.Model, tokJSON []byte, runID string) (*Engine, error) {
	mc := m.Config
	cfg.Model = &mc
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var base []byte
	if cfg.LoRA != nil {
		base = f32bytes(m.ParamValues())
		cfg.Base = store.Hash(base)
		if err := withLoRA(env.Store, m, cfg.LoRA, "", cfg.Seed); err != nil {
			return nil, err
		}
	}
	return start(cfg, env, m, runID, func() error {
		for _, b := range [][]byte{tokJSON, base} {
			if b == nil {
				continue
			}
			if _, err := env.Store.PutBlob(b); err != nil {
				return err
			}
		}
		return env.Store.CreateRun(runID, mustJSON(cfg), time.Now())
	})
}

// start builds the engine of a run that has not begun, loads its starting
// harness (a built-in name or source) — both before record, so a bad
// configuration records nothing — then begins it.
func start(cfg Config, env Env, m *model.Model, runID string, record func() error) (*Engine, error) {
	e, err := newEngine(cfg, env, m, runID)
	if err != nil {
		return nil, err
	}
	src := cfg.Harness
	if b, err := harnesses.Builtin(cfg.Domain, cfg.Harness); err == nil {
		src = b
	}
	h, err := harnesses.Load(cfg.Harness, src, harnesses.EnvOf(env.Domain))
	if err != nil {
		return nil, fmt.Errorf("engine: starting harness: %w", err)
	}
	if e.startAudit, err = e.auditStart(context.Background(), h); err != nil {
		return nil, err
	}
	if err := record(); err != nil {
		return nil, err
	}
	if err := e.begin(h); err != nil {
		return nil, err
	}
	return e, nil
}

// begin sets up a recorded run's first state — the starting harness, the
// schedule, the starting weights and optimizer — and saves its first
// resume point. A run recorded but stopped before that point (killed, or a
// store write failed) begins again from here when resumed.
func (e *Engine) begin(h *harnesses.Harness) error {
	cfg, env := e.Cfg, e.env
	var err error
	if err := env.Store.PutHarness(store.Harness{Hash: h.Hash, Source: h.Source, Proposer: "start"}); err != nil {
		return err
	}
	e.st = State{Phase: cfg.firstPhase(), Round: 1, Archive: search.NewArchive()}
	ent := e.st.Archive.Add(search.Entry{Hash: h.Hash, Source: h.Source, Proposer: "start"})
	if a := e.startAudit; a != nil {
		ent.NullLift, ent.HasNull = a.Lift, true
	}
	if err := e.st.Archive.Accept(h.Hash); err != nil {
		return err
	}
	if cfg.Schedule == "fixed" {
		if e.st.Fixed, err = NewFixed(cfg.E, cfg.I, cfg.StepsPerEpoch()); err != nil {
			return err
		}
	} else if e.st.Adaptive, err = NewAdaptive(cfg.StepsPerEpoch()); err != nil {
		return err
	}
	if e.st.Weights, err = e.putWeights(); err != nil {
		return err
	}
	if e.st.Optimizer, err = e.putOptimizer(); err != nil {
		return err
	}
	// The first resume point: a run killed before its first step resumes
	// by starting (nothing of it has happened yet).
	return e.saveResume()
}

// Resume reopens a stored run at its last resume point. Commands journaled
// after that point are applied again before the run continues. env.Bundle
// may be nil: the model is then built from the run's stored configuration
// on backend be (its weights come from the resume point either way), and
// the run renders with the tokenizer it stored.
func Resume(env Env, be kernels.Backend, runID string) (*Engine, error) {
	var m *model.Model
	if env.Bundle != nil {
		m = env.Bundle.Model
	}
	return resumeWith(env, be, runID, m)
}

// resumeWith is Resume with model m (nil: built on be, or, for a run
// stopped before its first resume point, from its start record).
func resumeWith(env Env, be kernels.Backend, runID string, m *model.Model) (*Engine, error) {
	r, err := env.Store.GetRun(runID)
	if err != nil {
		return nil, err
	}
	cfg, err := DecodeConfig(runID, r.Config)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine: run %s: %w", runID, err)
	}
	if len(r.Cursor) == 0 {
		// Recorded, but stopped before its first resume point: nothing of
		// it has happened, so it begins — from the starting weights it
		// recorded, or the caller's.
		if m == nil && cfg.Start != nil {
			if m, err = StartingModel(env.Store, *cfg.Start, be, ""); err != nil {
				return nil, fmt.Errorf("engine: run %s stopped before its first resume point: %w", runID, err)
			}
		}
		if m == nil {
			return nil, fmt.Errorf("engine: run %s stopped before its first resume point: resume it with its starting model", runID)
		}
		// The starting weights are the frozen ones (the base blob holds
		// the same), unless they came with adapters of their own.
		if err := withLoRA(env.Store, m, cfg.LoRA, "", cfg.Seed); err != nil {
			return nil, fmt.Errorf("engine: run %s: %w", runID, err)
		}
		return start(cfg, env, m, runID, func() error { return nil })
	}
	if m == nil {
		if cfg.Model == nil {
			return nil, fmt.Errorf("engine: run %s: no model configuration stored", runID)
		}
		if m, err = model.New(*cfg.Model, be, 0); err != nil {
			return nil, fmt.Errorf("engine: run %s: %w", runID, err)
		}
	}
	if err := withLoRA(env.Store, m, cfg.LoRA, cfg.Base, cfg.Seed); err != nil {
		return nil, fmt.Errorf("engine: run %s: %w", runID, err)
	}
	e, err := newEngine(cfg, env, m, runID)
	if err != nil {
		return nil, err
	}
	if e.st, err = DecodeState(runID, r.Cursor); err != nil {
		return nil, err
	}
	e.saved = [3]string{e.st.Weights, e.st.Optimizer, e.st.PhaseWeights}
	if err := e.loadWeights(e.st.Weights); err != nil {
		return nil, err
	}
	if err := e.loadOptimizer(e.st.Optimizer); err != nil {
		return nil, err
	}
	if err := e.prepareReference(); err != nil {
		return nil, err
	}
	if err := env.Store.TruncateEvents(runID, e.st.EventsSeq); err != nil {
		return nil, err
	}
	if err := env.Store.TruncateSamples(runID, e.st.SamplesSeq); err != nil {
		return nil, err
	}
	// Replay commands journaled after the resume point.
	var pending []JournaledCommand
	err = env.Store.Control(runID, func(seq uint64, b []byte) error {
		if seq <= e.st.ControlApplied {
			return nil
		}
		var j JournaledCommand
		if err := json.Unmarshal(b, &j); err != nil {
			return fmt.Errorf("engine: run %s: control journal entry %d: %w", runID, seq, err)
		}
		pending = append(pending, j)
		e.st.ControlApplied = seq
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, j := range pending {
		e.apply(j.Command)
	}
	return e, nil
}

// runPolicy is the policy that samples the run's rollouts: the
// environment's, else the configured server's, else the local model's.
func runPolicy(cfg Config, env Env, m *model.Model, tmpl *chat.Template) (policy.Policy, error) {
	if env.Policy != nil {
		return env.Policy, nil
	}
	if s := cfg.PolicyServer; s != nil {
		p, err := s.Policy(cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("engine: config field policy_server: %w", err)
		}
		return p, nil
	}
	p, err := chat.NewLocalWith(m, tmpl, model.SamplerOptions{BF16: cfg.SampleBF16, KVBF16: cfg.SampleKVBF16, MaxBatch: SampleWidth})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	return p, nil
}

func newEngine(cfg Config, env Env, m *model.Model, runID string) (*Engine, error) {
	if env.Domain == nil || m == nil || env.Store == nil {
		return nil, errors.New("engine: Env needs a domain, a model and a store")
	}
	if env.Domain.Name() != cfg.Domain {
		return nil, fmt.Errorf("engine: config domain %q but the environment's domain is %q", cfg.Domain, env.Domain.Name())
	}
	e := &Engine{RunID: runID, Cfg: cfg, env: env, model: m, harnessCache: map[string]*harnesses.Harness{},
		broker: NewBroker[Event](), control: make(chan Command, 64), resumeEvery: env.ResumeEvery, lastSave: time.Now()}
	if e.resumeEvery == 0 {
		e.resumeEvery = DefaultResumeEvery
	}
	tok, err := runTokenizer(env, cfg, runID)
	if err != nil {
		return nil, err
	}
	if e.tmpl, err = chat.NewTemplate(tok); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if cfg.Generation != nil {
		e.tmpl = e.tmpl.WithStops(cfg.Generation.EOS)
	}
	if e.pol, err = runPolicy(cfg, env, m, e.tmpl); err != nil {
		return nil, err
	}
	if _, ok := e.pol.(*chat.Local); ok {
		e.inFlight = SampleWidth
		e.laned = true
	}
	if pool, ok := e.pol.(*remote.Pool); ok && cfg.PolicyServer.Adapters != "" {
		if e.fleet, err = newFleet(pool, e.tmpl, m, runID, *cfg.PolicyServer, func() (string, int) { return e.st.Weights, e.st.Step }); err != nil {
			return nil, err
		}
		e.pol = e.fleet
	}
	tc := model.DefaultTrainConfig()
	tc.Schedule, tc.ActivationBytes = model.ConstantLR(cfg.LR), env.ActivationBytes
	if e.trainer, err = model.NewTrainer(m, tc); err != nil {
		return nil, err
	}
	switch cfg.Operator {
	case "rsft":
		e.op = &weights.RSFT{Trainer: e.trainer, Threshold: cfg.Threshold, KLBeta: cfg.KL, Model: m}
	case "dpo":
		e.op = &weights.DPO{Model: m, Trainer: e.trainer, Beta: 0.1, Threshold: cfg.Threshold}
	case "grpo":
		e.op = &weights.GRPO{Model: m, Trainer: e.trainer, Clip: 0.2, Epochs: 1, KLBeta: cfg.KL, Threshold: cfg.Threshold,
			OldFromModel: cfg.SampleBF16}
	}
	for _, sp := range []struct {
		name string
		n    int
		dst  *[]data.Task
	}{{data.SplitTrain, cfg.TrainTasks, &e.train}, {data.SplitVal, cfg.ValTasks, &e.val}, {data.SplitAudit, cfg.AuditTasks, &e.audit}, {data.SplitTest, cfg.TestTasks, &e.test}} {
		ts, err := env.Domain.Tasks(sp.name)
		if err != nil {
			return nil, fmt.Errorf("engine: %s split: %w", sp.name, err)
		}
		*sp.dst = ts[:min(sp.n, len(ts))]
		if len(*sp.dst) == 0 && sp.n > 0 {
			return nil, fmt.Errorf("engine: the %s split of %s is empty", sp.name, cfg.Domain)
		}
	}
	if len(e.train) < cfg.PromptsPerStep {
		return nil, fmt.Errorf("engine: %d train tasks, fewer than %d prompts per step", len(e.train), cfg.PromptsPerStep)
	}
	return e, nil
}

// Subscribe returns a subscription to the run's events.
func (e *Engine) Subscribe(capacity int) *Subscription[Event] { return e.broker.Subscribe(capacity) }

// Send queues a control command; it never blocks the caller for long (a
// full queue returns an error).
func (e *Engine) Send(c Command) error {
	select {
	case e.control <- c:
		return nil
	default:
		return errors.New("engine: control queue full")
	}
}

// State returns a copy of the cursor (for tests and `whale show`).
func (e *Engine) State() State { return e.st }

// Run runs until the budget or the rounds are spent, ctx is cancelled, or
// an error; it returns the summary of a finished run.
func (e *Engine) Run(ctx context.Context) (Summary, error) {
	defer e.broker.Close()
	if e.st.Done && e.st.Summary != nil {
		return *e.st.Summary, nil
	}
	e.clock = time.Now()
	defer func() { e.clock = time.Time{} }()
	defer holdMemoryLimit(MemoryLimit(e.Cfg))()
	if !e.st.Started && e.st.Step == 0 && e.st.Iteration == 0 && e.st.PhaseSteps == 0 && len(e.st.Phases) == 0 {
		if err := e.emit(EvRunStarted, mustJSON(e.Cfg)); err != nil {
			return Summary{}, err
		}
		v, pass, err := e.evalVal(ctx)
		if err != nil {
			return Summary{}, err
		}
		e.st.ValBefore, e.st.ValPassBefore = v, pass
		if e.Cfg.CurveTest {
			t, err := e.evalTest(ctx, e.st.Archive.Incumbent)
			if err != nil {
				return Summary{}, err
			}
			e.st.TestStart = &t
			e.st.StartCalls = e.st.TestCalls[testKey(e.st.Weights, e.st.Archive.Incumbent, e.Cfg.curveK(), e.Cfg.TestK)]
		}
		if err := e.beginPhase(e.Cfg.firstPhase()); err != nil {
			return Summary{}, err
		}
		e.st.Started = true
		if err := e.saveResume(); err != nil {
			return Summary{}, err
		}
	} else if err := e.emit(EvRunResumed, nil); err != nil {
		return Summary{}, err
	}
	e.markConsistent()
	for !e.st.Done {
		if err := ctx.Err(); err != nil {
			return Summary{}, e.interrupted(err)
		}
		if err := e.drainControl(ctx); err != nil {
			return Summary{}, e.interrupted(err)
		}
		if e.st.Paused {
			continue
		}
		over := e.phaseSpent(e.st.Phase)
		end := e.st.Force || over || e.stageSpent()
		if !end {
			var err error
			if e.st.Phase == PhaseWeights {
				end, err = e.weightStep(ctx)
			} else {
				end, err = e.harnessIteration(ctx)
			}
			if err != nil {
				return Summary{}, e.interrupted(err)
			}
			over = e.phaseSpent(e.st.Phase)
			end = end || over || e.stageSpent()
			e.markConsistent()
		}
		if end {
			if err := e.endPhase(ctx); err != nil {
				return Summary{}, e.interrupted(err)
			}
		}
		if e.saveDue(end) { // always at a boundary, which moved the state on
			if err := e.saveResume(); err != nil {
				return Summary{}, err
			}
		}
		if e.stopAfter != nil && e.stopAfter(e.st) {
			return Summary{}, errStopped
		}
	}
	return *e.st.Summary, nil
}

// interrupted handles an error that ended Run between resume points: when
// the context was cancelled (Ctrl-C, a stop request) it writes a resume
// point at the last completed step, so the interruption loses only the
// step in flight; other errors leave the last resume point as it is.
func (e *Engine) interrupted(err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if serr := e.saveOnCancel(); serr != nil {
		return fmt.Errorf("%w (and the resume point at the last completed step was not written: %v)", err, serr)
	}
	return err
}

// drainControl applies queued commands; while paused it waits for one.
func (e *Engine) drainControl(ctx context.Context) error {
	for {
		var c Command
		if e.st.Paused {
			select {
			case c = <-e.control:
			case <-ctx.Done():
				return ctx.Err()
			}
			e.clock = time.Now() // a paused run computes nothing
		} else {
			select {
			case c = <-e.control:
			default:
				return nil
			}
		}
		j := JournaledCommand{Command: c, Step: e.st.Step, Iteration: e.st.Iteration, Phase: e.st.Phase}
		if err := e.apply(c); err != nil {
			j.Error = err.Error()
		}
		seq, err := e.env.Store.AppendControl(e.RunID, mustJSON(j))
		if err != nil {
			return err
		}
		e.st.ControlApplied = seq
		if err := e.emit(EvControl, mustJSON(j)); err != nil {
			return err
		}
		// A resume point right after the command: a resumed run replays
		// journaled commands at its resume point, which is then exactly
		// where this one took effect.
		if err := e.saveResume(); err != nil {
			return err
		}
	}
}

// apply changes the state for one command; a command that makes no sense
// now (pruning the incumbent) is refused with an error, which is journaled.
func (e *Engine) apply(c Command) error {
	a := e.st.Archive
	switch c.Kind {
	case "force":
		if c.ForPhase != "" && (c.ForPhase != e.st.Phase || c.ForRound != e.st.Round) {
			return fmt.Errorf("force of the round %d %s phase dropped: %w (round %d %s phase running)", c.ForRound, c.ForPhase, ErrPhaseEnded, e.st.Round, e.st.Phase)
		}
		e.st.Force = true
	case "pause":
		e.st.Paused = true
	case "resume":
		e.st.Paused = false
	case "prune":
		return a.Prune(c.Target)
	case "unprune":
		return a.Unprune(c.Target)
	case "freeze":
		a.Frozen[c.Target] = true
	case "unfreeze":
		delete(a.Frozen, c.Target)
	default:
		return fmt.Errorf("engine: unknown command %q", c.Kind)
	}
	return nil
}

// trainBatch returns the tasks of weight step s: each epoch is a seeded
// permutation of the train tasks dealt P at a time, so the batch depends on
// the step number alone.
func (e *Engine) trainBatch(s int) []data.Task {
	spe := e.Cfg.StepsPerEpoch()
	epoch, at := s/spe, (s%spe)*e.Cfg.PromptsPerStep
	perm := rand.New(rand.NewPCG(e.Cfg.Seed, 0x7a11_0000+uint64(epoch))).Perm(len(e.train))
	out := make([]data.Task, e.Cfg.PromptsPerStep)
	for i := range out {
		out[i] = e.train[perm[at+i]]
	}
	return out
}

// harness returns an archived harness, loaded once.
func (e *Engine) harness(hash string) (*harnesses.Harness, error) {
	ent, ok := e.st.Archive.Entries[hash]
	if !ok {
		return nil, fmt.Errorf("engine: harness %s not in the archive", hash)
	}
	return e.load(ent.Source)
}

// load loads a harness source once per run and archives it in the store
// the first time it is seen.
func (e *Engine) load(src string) (*harnesses.Harness, error) {
	hash := harnesses.Hash(src)
	if h, ok := e.harnessCache[hash]; ok {
		return h, nil
	}
	h, err := harnesses.LoadDrawn(hash[:12]+".star", src, harnesses.EnvOf(e.env.Domain))
	if err != nil {
		return nil, err
	}
	stop := e.timeStore()
	err = e.env.Store.PutHarness(store.Harness{Hash: h.Hash, Source: h.Source})
	stop()
	if err != nil {
		return nil, err
	}
	e.harnessCache[hash] = h
	return h, nil
}

func (e *Engine) runOpts(prefix string, k int) harnesses.RunOptions {
	return harnesses.RunOptions{Seed: e.Cfg.Seed, K: k, Temperature: e.Cfg.Temperature, MaxNewTokens: e.Cfg.MaxNewTokens, KeyPrefix: prefix,
		BatchSize: e.inFlight, Lanes: e.lanes(), Progress: e.progressOf(prefix)}
}

func modelCalls(ts []harnesses.Trajectory) int {
	n := 0
	for i := range ts {
		n += ts[i].ModelCalls()
	}
	return n
}

func completionTokens(ts []harnesses.Trajectory) int {
	n := 0
	for _, t := range ts {
		for _, c := range t.Calls {
			n += len(c.Completion)
		}
	}
	return n
}

// u64s encodes float32s little-endian (weights and optimizer blobs).
func f32bytes(vs ...[]float32) []byte {
	n := 0
	for _, v := range vs {
		n += len(v)
	}
	b := make([]byte, 0, 4*n)
	for _, v := range vs {
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

func bytesf32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
