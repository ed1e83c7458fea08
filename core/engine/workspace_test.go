package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

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
// bit of what they do. The amd64 assembly kernels (AVX2 and AVX-512 agree
// here) and the pure-Go ones round differently.
var mainTrajectories = map[bool]struct{ run, fork, local string }{
	true: {run: "2353852826a3f79a8cbd0efba49beabeb085ba91325382140ca70b69e5f8adfe",
		fork:  "65ac3908755cda0da0ed72c7d2a327896bfd34d54cead07054b88b47f7d26626",
		local: "cb90d7452a0934835396211842df763d405b0abb34c5cf7dfd8a49c81041f263"},
	false: {run: "63edc5ba1e2575ab67eee297ee67de4a44ea20766af913a0d37dc5d82ad5200a",
		fork:  "2df720c5c476c96968f372ee540000038e683e7db97424576aa0b114c0e38dac",
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
