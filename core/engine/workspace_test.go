package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/bundle"
	"whale/kernels"
)

// trajectoryHash is the sha256 of what a run did: every stored event
// (kind and payload, in order; resume markers left out) and the weights and
// optimizer state it ended with. Run ids are replaced by their role (the
// workspace names new runs by the clock), so the hash depends on the run's
// work alone; an id must not occur in the records but as the id (the
// workspace's DOMAIN-DATE-TIME ids do not).
func trajectoryHash(t *testing.T, e *Engine, ids map[string]string) string {
	t.Helper()
	h := sha256.New()
	name := func(b []byte) []byte {
		s := string(b)
		for id, role := range ids {
			s = strings.ReplaceAll(s, id, role)
		}
		return []byte(s)
	}
	for _, ev := range withoutResumed(events(t, e.env.Store, e.RunID)) {
		h.Write([]byte(ev.Kind))
		h.Write(name(ev.Data))
	}
	st := e.State()
	h.Write([]byte(st.Weights + st.Optimizer))
	return hex.EncodeToString(h.Sum(nil))
}

// mainTrajectories are the trajectories of a tiny run (also when stopped
// and resumed by a second process), of a run forked from its first kept
// checkpoint, and of a run whose rollouts the model itself samples through
// its tokenizer's chat template, as main computed them before runs were
// made through the Workspace (commit 1764270, with New, Resume and Fork
// under the ids RUN and FORK): making runs in one place must not change a
// bit of what they do. The run and fork hashes changed twice since, on
// purpose, each the same sum of training terms in another float32 order:
// a multi-turn sample's earlier turn trains inside the next turn's
// sequence (core/weights.sequences), and a prompt's samples share one row
// of a training step (model.packTrain, with the sequences sorted by
// core/weights.microBatches). The amd64 assembly kernels (AVX2 and AVX-512 agree
// here) and the pure-Go ones round differently.
var mainTrajectories = map[bool]struct{ run, fork, local string }{
	true: {run: "3c6089fcfaed8291efc1e0b65193bc209735e022e6332b7cbe2ae7cce08f5e70",
		fork:  "1f99024178cc0fca052c4eee853362ae980bb7bbf266eb3484c2767ff0e8bca5",
		local: "cb90d7452a0934835396211842df763d405b0abb34c5cf7dfd8a49c81041f263"},
	false: {run: "d6479ec9aa487ce5484f97baf9b343ec9d6873688446e78b0fb1a296eb71cfa9",
		fork:  "b3be6a13444afdd4e0b33bca69dd284ca3c2f72818bac18ae8a7ffab6d5f8491",
		local: "cb90d7452a0934835396211842df763d405b0abb34c5cf7dfd8a49c81041f263"},
}

func TestWorkspaceRunsAreBitIdenticalToMain(t *testing.T) {
	want := mainTrajectories[!strings.HasPrefix(kernels.KernelName(), "pure Go")]
	wantRunHash, wantForkHash, wantLocalHash := want.run, want.fork, want.local
	cfg := tinyConfig(t)
	ctx := context.Background()

	db := openDB(t)
	ws := NewWorkspace(db, kernels.NewCPU())
	a, err := ws.NewRun(cfg, testEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{a.RunID: "RUN"}
	if got := trajectoryHash(t, a, ids); got != wantRunHash {
		t.Errorf("run: trajectory %s, main's %s", got, wantRunHash)
	}

	// Stopped inside its first harness phase, resumed by a new process.
	wsB := NewWorkspace(openDB(t), kernels.NewCPU())
	b, err := wsB.NewRun(cfg, testEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	saves := 0
	b.stopAfter = func(State) bool { saves++; return saves == 7 }
	if _, err := b.Run(ctx); !errors.Is(err, errStopped) {
		t.Fatalf("stop: %v", err)
	}
	envC := testEnv(t, nil)
	envC.Bundle = nil
	c, err := wsB.Resume(b.RunID, envC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := trajectoryHash(t, c, map[string]string{c.RunID: "RUN"}); got != wantRunHash {
		t.Errorf("resumed run: trajectory %s, main's %s", got, wantRunHash)
	}

	// A fork of the first kept checkpoint, run to its end.
	kept, err := db.Checkpoints(a.RunID + "/")
	if err != nil || len(kept) == 0 {
		t.Fatalf("kept checkpoints %v (%v)", kept, err)
	}
	fenv := testEnv(t, nil)
	fenv.Bundle = nil
	f, err := ws.Fork(kept[0], fenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	ids[f.RunID] = "FORK"
	if got := trajectoryHash(t, f, ids); got != wantForkHash {
		t.Errorf("fork of %s: trajectory %s, main's %s", kept[0], got, wantForkHash)
	}
	if c.model.Backend() != wsB.Backend() || f.model.Backend() != ws.Backend() {
		t.Error("a resumed or forked run's model is not on its workspace's backend")
	}

	// Read back: the finished run, its checkpoints in the order it kept
	// them, and the fork's origin.
	v, err := ws.Load(a.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if v.ID() != a.RunID || v.Config.Domain != "math" || !v.State.Done || v.Resumable() || v.Origin != nil {
		t.Fatalf("view of the finished run: id %s, domain %s, done %v, resumable %v, origin %v", v.ID(), v.Config.Domain, v.State.Done, v.Resumable(), v.Origin)
	}
	if evs, err := v.Events(0, 0); err != nil || len(evs) != len(events(t, db, a.RunID)) {
		t.Fatalf("view's events: %d (%v), want the %d stored", len(evs), err, len(events(t, db, a.RunID)))
	}
	order, err := v.Checkpoints()
	if err != nil || len(order) != 4 || order[0] != a.RunID+"/01-weights" || order[1] != a.RunID+"/01-harness" || order[3] != a.RunID+"/02-harness" {
		t.Fatalf("view's checkpoints %v (%v), want weights then harness, round by round", order, err)
	}
	if fv, err := ws.Load(f.RunID); err != nil || fv.Origin == nil || fv.Origin.Checkpoint != kept[0] || fv.Origin.Run != a.RunID {
		t.Fatalf("the fork's origin %+v (%v), want checkpoint %s of %s", fv.Origin, err, kept[0], a.RunID)
	}

	// The model samples its own rollouts.
	lcfg := cfg
	lcfg.MaxRounds = 1
	lenv := testEnv(t, nil)
	lenv.Policy = nil
	l, err := NewWorkspace(openDB(t), kernels.NewCPU()).NewRun(lcfg, lenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := trajectoryHash(t, l, map[string]string{l.RunID: "RUN"}); got != wantLocalHash {
		t.Errorf("local-policy run: trajectory %s, main's %s", got, wantLocalHash)
	}
}

// TestWorkspaceNamesAndRecordsNewRuns: a new run gets DOMAIN-DATE-TIME,
// with a suffix when that is taken; a bundle opened from a source is
// recorded as the run's start and gives its data seed, one made in memory
// records neither; a run needs a bundle.
func TestWorkspaceNamesAndRecordsNewRuns(t *testing.T) {
	cfg := tinyConfig(t)
	ws := NewWorkspace(openDB(t), kernels.NewCPU())
	ws.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)) }
	if _, err := ws.NewRun(cfg, Env{Domain: testEnv(t, nil).Domain}); err == nil || !strings.Contains(err.Error(), "Env.Bundle") {
		t.Fatalf("a run without a bundle: %v", err)
	}
	a, err := ws.NewRun(cfg, testEnv(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if a.RunID != "math-20260102-020405" || a.Cfg.Start != nil || a.Cfg.DataSeed != cfg.DataSeed {
		t.Fatalf("in-memory bundle: run %s, start %+v, data seed %d; want math-20260102-020405, none, the config's %d", a.RunID, a.Cfg.Start, a.Cfg.DataSeed, cfg.DataSeed)
	}
	env := testEnv(t, nil)
	env.Bundle.Kind, env.Bundle.Name, env.Bundle.SHA256, env.Bundle.DataSeed = bundle.KindFile, "m.safetensors", "feed", cfg.DataSeed+6
	b, err := ws.NewRun(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs("m.safetensors")
	if b.RunID != a.RunID+"-2" || b.Cfg.DataSeed != cfg.DataSeed+6 || b.Cfg.Start == nil || *b.Cfg.Start != (StartModel{Kind: StartFile, Name: abs, SHA256: "feed"}) {
		t.Fatalf("file bundle: run %s, data seed %d, start %+v; want %s-2, the bundle's, the file", b.RunID, b.Cfg.DataSeed, b.Cfg.Start, a.RunID)
	}
	v, err := ws.Load(b.RunID)
	if err != nil || v.Config.DataSeed != cfg.DataSeed+6 || !v.Resumable() || v.State.Round != 1 {
		t.Fatalf("stored: %+v (%v)", v, err)
	}
	if _, err := ws.ResumeMoved(b.RunID, Env{Domain: env.Domain}, "elsewhere.safetensors"); err == nil || !strings.Contains(err.Error(), "needs no starting model") {
		t.Fatalf("a moved start for a run with a resume point: %v", err)
	}
}
