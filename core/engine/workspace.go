package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"whale/core/basemodel"
	"whale/core/bundle"
	"whale/core/store"
	"whale/kernels"
)

// Workspace is one workspace file (a bbolt store) and the backend its
// runs' models run on: the one place where runs are created (and their
// ids assigned), resumed, forked and read back. cmd, the workbench, the
// bench and the rollout bench all make their runs through it, so a run
// is made one way whoever starts it.
type Workspace struct {
	db *store.DB
	// be is set on first use when the caller gave none.
	mu sync.Mutex
	be kernels.Backend
	// own says Close closes db (Open opened it).
	own bool
	// now is the clock run ids are read from (time.Now; tests set it).
	now func() time.Time
}

// OpenTimeout is how long Open waits for another process that holds the
// workspace file before it gives up.
const OpenTimeout = time.Second

// Open opens the workspace file at path, creating it when there is none,
// whose runs' models run on be (nil: the float32 CPU backend). It fails
// within OpenTimeout when another process holds the file.
func Open(path string, be kernels.Backend) (*Workspace, error) {
	db, err := store.Open(path, OpenTimeout)
	if err != nil {
		return nil, err
	}
	w := NewWorkspace(db, be)
	w.own = true
	return w, nil
}

// NewWorkspace is the workspace of a store the caller opened (and
// closes), on backend be (nil: the float32 CPU backend).
func NewWorkspace(db *store.DB, be kernels.Backend) *Workspace {
	return &Workspace{db: db, be: be}
}

// Close closes the store when Open opened it.
func (w *Workspace) Close() error {
	if !w.own {
		return nil
	}
	return w.db.Close()
}

// Store is the workspace's store, for what serves or copies it (the
// attach socket, backups, checks); runs are made through the Workspace.
func (w *Workspace) Store() *store.DB { return w.db }

// Backend is where the workspace's runs' models run.
func (w *Workspace) Backend() kernels.Backend {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.be == nil {
		w.be = kernels.NewCPU()
	}
	return w.be
}

// Path is the workspace file's path.
func (w *Workspace) Path() string { return w.db.Path() }

// NewRun starts a new run of cfg on env (which needs a Bundle) under a
// new id, DOMAIN-YYYYMMDD-HHMMSS in UTC (with -2, -3, … when taken). A
// bundle opened from a source (the embedded model, a file, a folder) is
// recorded as the run's start (Config.Start), so that a run stopped before
// its first resume point can begin again unaided, and gives the run its
// data seed (Config.DataSeed): env.Domain must be opened with it. A bundle
// made in memory records neither.
func (w *Workspace) NewRun(cfg Config, env Env) (*Engine, error) {
	if env.Bundle == nil {
		return nil, errors.New("engine: a new run needs a model (Env.Bundle)")
	}
	if b := env.Bundle; b.Kind != "" {
		cfg.DataSeed = b.DataSeed
		var err error
		if cfg.Start, err = StartRecord(b); err != nil {
			return nil, err
		}
	}
	id, err := w.NewRunID(cfg.Domain)
	if err != nil {
		return nil, err
	}
	return w.StartRun(id, cfg, env)
}

// StartRun starts a new run of cfg, exactly as given, on env under id,
// which must be new: the bench names its runs after their jobs.
func (w *Workspace) StartRun(id string, cfg Config, env Env) (*Engine, error) {
	env.Store = w.db
	return New(cfg, env, id)
}

// NewRunID is a new run id in the workspace for a run in domain:
// DOMAIN-YYYYMMDD-HHMMSS (UTC), with -2, -3, … when that one is taken.
func (w *Workspace) NewRunID(domain string) (string, error) {
	runs, err := w.db.Runs()
	if err != nil {
		return "", err
	}
	taken := map[string]bool{}
	for _, r := range runs {
		taken[r.ID] = true
	}
	now := time.Now
	if w.now != nil {
		now = w.now
	}
	base := fmt.Sprintf("%s-%s", domain, now().UTC().Format("20060102-150405"))
	id := base
	for n := 2; taken[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	return id, nil
}

// StartRecord is what a run records of its starting model b (opened from
// a source), so that it can begin again after a stop before its first
// resume point: the embedded model by name, a file or folder by absolute
// path, each with its sha256.
func StartRecord(b *bundle.Bundle) (*StartModel, error) {
	switch b.Kind {
	case bundle.KindEmbedded:
		return &StartModel{Kind: StartEmbedded, Name: basemodel.Name, SHA256: b.SHA256}, nil
	case bundle.KindFile, bundle.KindDir:
		abs, err := filepath.Abs(b.Name)
		if err != nil {
			return nil, fmt.Errorf("engine: starting model %s: %w", b.Name, err)
		}
		kind := StartFile
		if b.Kind == bundle.KindDir {
			kind = StartDir
		}
		return &StartModel{Kind: kind, Name: abs, SHA256: b.SHA256}, nil
	}
	return nil, fmt.Errorf("engine: starting model %s: a bundle of kind %q has no source to record", b.Name, b.Kind)
}

// Resume reopens run id at its last resume point on env (Env.Bundle
// usually nil: the run's own model configuration and tokenizer come back
// from the store), building its model on the workspace's backend.
func (w *Workspace) Resume(id string, env Env) (*Engine, error) {
	env.Store = w.db
	return Resume(env, w.Backend(), id)
}

// ResumeMoved is Resume for a run stopped before its first resume point
// whose starting model file or folder is now at path: its hash must be
// the one the run recorded. (A run recorded before runs kept their start
// takes the model at path unchecked.)
func (w *Workspace) ResumeMoved(id string, env Env, path string) (*Engine, error) {
	v, err := w.Load(id)
	if err != nil {
		return nil, err
	}
	if len(v.Run.Cursor) > 0 {
		return nil, fmt.Errorf("engine: run %s resumes from its last resume point, which holds its weights: it needs no starting model", id)
	}
	env.Store = w.db
	if v.Config.Start == nil {
		b, err := bundle.Open(path, w.Backend())
		if err != nil {
			return nil, err
		}
		return resumeWith(env, w.Backend(), id, b.Model)
	}
	m, err := StartingModel(w.db, *v.Config.Start, w.Backend(), path)
	if err != nil {
		return nil, err
	}
	return resumeWith(env, w.Backend(), id, m)
}

// ForkPlan reads what a run forked from kept checkpoint ckptID will run:
// the configuration of the run that kept it with the checkpoint's harness
// and weights (see the package function). The caller opens the domain it
// names, with its data seed, for Fork.
func (w *Workspace) ForkPlan(ckptID string) (Config, error) {
	cfg, _, err := ForkPlan(w.db, ckptID)
	return cfg, err
}

// Fork starts a new run, under a new id, from kept checkpoint ckptID: its
// weights and harness, the configuration of the run that kept it
// otherwise. env.Domain is the one ForkPlan's configuration names;
// env.Bundle is usually nil (the model is built on the workspace's
// backend).
func (w *Workspace) Fork(ckptID string, env Env) (*Engine, error) {
	cfg, err := w.ForkPlan(ckptID)
	if err != nil {
		return nil, err
	}
	id, err := w.NewRunID(cfg.Domain)
	if err != nil {
		return nil, err
	}
	env.Store = w.db
	return Fork(env, w.Backend(), ckptID, id)
}

// Amend rewrites run id's stored configuration with a (see the package
// function) before it resumes.
func (w *Workspace) Amend(id string, a Amendment) (Config, error) {
	return Amend(w.db, id, a)
}

// RunView is a stored run read back, read-only: its record, configuration,
// resume point and origin, with readers of its events, samples,
// checkpoints and harnesses.
type RunView struct {
	Run    store.Run
	Config Config
	// State is the run's last resume point (zero before its first).
	State State
	// Origin is where a forked run came from (nil when not forked).
	Origin *ForkOrigin
	db     *store.DB
}

// Load reads run id back without changing anything.
func (w *Workspace) Load(id string) (RunView, error) {
	r, err := w.db.GetRun(id)
	if err != nil {
		return RunView{}, err
	}
	return w.view(r)
}

// view is RunView of a stored run.
func (w *Workspace) view(r store.Run) (RunView, error) {
	cfg, st, err := DecodeRun(r)
	if err != nil {
		return RunView{}, err
	}
	origin, err := ForkedFrom(w.db, r.ID)
	if err != nil {
		return RunView{}, err
	}
	return RunView{Run: r, Config: cfg, State: st, Origin: origin, db: w.db}, nil
}

// Runs reads back every run of the workspace, in the store's order.
func (w *Workspace) Runs() ([]RunView, error) {
	runs, err := w.db.Runs()
	if err != nil {
		return nil, err
	}
	out := make([]RunView, 0, len(runs))
	for _, r := range runs {
		cfg, st, err := DecodeRun(r)
		if err != nil {
			return nil, err
		}
		out = append(out, RunView{Run: r, Config: cfg, State: st, db: w.db})
	}
	return out, nil
}

// NewestUnfinished is the id of the newest run that is not finished and
// has a resume point, or "" when there is none.
func (w *Workspace) NewestUnfinished() (string, error) {
	runs, err := w.db.Runs()
	if err != nil {
		return "", err
	}
	best := store.Run{}
	for _, r := range runs {
		if r.Status != "finished" && len(r.Cursor) > 0 && (best.ID == "" || r.Created.After(best.Created)) {
			best = r
		}
	}
	return best.ID, nil
}

// ID is the run's id.
func (v RunView) ID() string { return v.Run.ID }

// Resumable says the run can continue: it is not finished and has a
// resume point or a start record to begin again from.
func (v RunView) Resumable() bool {
	return v.Run.Status != "finished" && (len(v.Run.Cursor) > 0 || v.Config.Start != nil)
}

// Events reads the run's stored events from sequence number from on (0:
// all), at most limit of them (0: no limit).
func (v RunView) Events(from uint64, limit int) ([]Event, error) {
	return StoredEvents(v.db, v.Run.ID, from, limit)
}

// Samples calls fn with each stored sample record of the run from
// sequence number from on, in order.
func (v RunView) Samples(from uint64, fn func(seq uint64, rec []byte) error) error {
	return v.db.Samples(v.Run.ID, from, fn)
}

// Checkpoints are the ids of the run's kept checkpoints, ordered as the
// run kept them (round, then the weights phase before the harness phase).
func (v RunView) Checkpoints() ([]string, error) {
	ids, err := v.db.Checkpoints(v.Run.ID + "/")
	if err != nil {
		return nil, err
	}
	return byRoundAndPhase(v.db, ids)
}

// HarnessSource is the source of a stored harness (any run's).
func (v RunView) HarnessSource(hash string) (string, error) {
	h, err := v.db.GetHarness(hash)
	return h.Source, err
}

// DecodeConfig decodes run runID's stored configuration.
func DecodeConfig(runID string, raw []byte) (Config, error) {
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("engine: run %s: stored config: %w", runID, err)
	}
	return cfg, nil
}

// DecodeState decodes run runID's stored resume point: a zero State when
// it has none yet.
func DecodeState(runID string, raw []byte) (State, error) {
	var st State
	if len(raw) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return State{}, fmt.Errorf("engine: run %s: resume point: %w", runID, err)
	}
	return st, nil
}

// DecodeRun decodes a stored run's configuration and resume point.
func DecodeRun(r store.Run) (Config, State, error) {
	cfg, err := DecodeConfig(r.ID, r.Config)
	if err != nil {
		return cfg, State{}, err
	}
	st, err := DecodeState(r.ID, r.Cursor)
	return cfg, st, err
}
