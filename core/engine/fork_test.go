package engine

import (
	"context"
	"testing"

	"whale/core/model"
	"whale/core/store"
	"whale/harnesses"
	"whale/kernels"
)

// TestForkStartsFromTheCheckpoint runs a tiny run, forks its last kept
// checkpoint, and checks that the new run starts from exactly the
// checkpoint's weights and harness, says where it came from, runs to its
// end, and leaves the first run as it was.
func TestForkStartsFromTheCheckpoint(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	env := testEnv(t, db)
	base := env.Bundle.Model.ParamValues()
	a, err := New(cfg, env, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids, err := db.Checkpoints("a/")
	if err != nil || len(ids) == 0 {
		t.Fatalf("checkpoints of a: %v, %v", ids, err)
	}
	id := ids[len(ids)-1]
	man, err := ReadCheckpoint(db, id)
	if err != nil {
		t.Fatal(err)
	}
	if man.Weights == store.Hash(f32bytes(base)) {
		t.Fatal("the checkpoint holds the untrained weights: the test would not notice a fork that ignores them")
	}
	before, err := db.GetRun("a")
	if err != nil {
		t.Fatal(err)
	}

	fenv := testEnv(t, db)
	fenv.Bundle = nil // built from the checkpoint's configuration
	f, err := Fork(fenv, kernels.NewCPU(), id, "b")
	if err != nil {
		t.Fatal(err)
	}
	st := f.State()
	if st.Weights != man.Weights {
		t.Fatalf("forked run starts from weights %s, checkpoint holds %s", st.Weights, man.Weights)
	}
	if got := store.Hash(f32bytes(f.model.ParamValues())); got != man.Weights {
		t.Fatalf("forked model's parameters hash to %s, checkpoint holds %s", got, man.Weights)
	}
	if st.Archive.Incumbent != man.Harness {
		t.Fatalf("forked run's incumbent %s, checkpoint's harness %s", st.Archive.Incumbent, man.Harness)
	}
	if harnesses.Hash(f.Cfg.Harness) != man.Harness {
		t.Fatal("the forked run's stored starting harness is not the checkpoint's source")
	}
	if f.Cfg.Seed != cfg.Seed || f.Cfg.MaxRounds != cfg.MaxRounds || f.Cfg.Domain != cfg.Domain {
		t.Fatalf("forked config %+v does not carry the first run's", f.Cfg)
	}
	o, err := ForkedFrom(db, "b")
	if err != nil || o == nil {
		t.Fatalf("origin of b: %v, %v", o, err)
	}
	if o.Checkpoint != id || o.Run != "a" || o.Weights != man.Weights || o.Harness != man.Harness {
		t.Fatalf("origin %+v", *o)
	}
	if o, err := ForkedFrom(db, "a"); err != nil || o != nil {
		t.Fatalf("a was not forked, got origin %v, %v", o, err)
	}

	// A fork stopped before it saved another resume point keeps its
	// origin when resumed.
	if _, err := Fork(testEnv(t, db), kernels.NewCPU(), id, "c"); err != nil {
		t.Fatal(err)
	}
	renv := testEnv(t, db)
	renv.Bundle = nil
	c, err := Resume(renv, kernels.NewCPU(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o, err := ForkedFrom(db, "c"); err != nil || o == nil || o.Checkpoint != id {
		t.Fatalf("a fork resumed before its next resume point lost its origin: %v, %v", o, err)
	}

	if _, err := f.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	evs := events(t, db, "b")
	if len(evs) < 2 || evs[0].Kind != EvForked || evs[1].Kind != EvRunStarted {
		t.Fatalf("forked run's first events: %+v", evs[:min(2, len(evs))])
	}
	after, err := db.GetRun("a")
	if err != nil {
		t.Fatal(err)
	}
	if string(after.Cursor) != string(before.Cursor) || after.Status != before.Status {
		t.Fatal("forking changed the run it came from")
	}
}

func TestForkRefusesBadInput(t *testing.T) {
	db := openDB(t)
	if _, err := Fork(testEnv(t, db), kernels.NewCPU(), "nope/01-weights", "b"); err == nil {
		t.Fatal("forking a missing checkpoint succeeded")
	}
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	a, err := New(cfg, testEnv(t, db), "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids, _ := db.Checkpoints("a/")
	env := testEnv(t, db)
	env.Bundle = nil
	if _, err := Fork(env, kernels.NewCPU(), ids[0], "a"); err == nil {
		t.Fatal("forking into an existing run id succeeded")
	}
	mc := testModel
	mc.IntermediateSize = 48
	m, err := model.New(mc, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	env.Bundle = byteBundle(t, m)
	if _, err := Fork(env, kernels.NewCPU(), ids[0], "c"); err == nil {
		t.Fatal("forking into a model of another shape succeeded")
	}
}
