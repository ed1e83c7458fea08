package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/engine"
	"whale/core/model"
	"whale/core/model/modeltest"
	"whale/core/store"
	"whale/core/tokenizer"
	"whale/data/domains"
	"whale/harnesses"
	"whale/kernels"
)

func TestRunFromCheckpointMisuse(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	if _, err := runWhale(t, "run", "--headless", "--from-checkpoint", "r/01-weights", "--domain", "math", "--db", db); !isUsage(err) || !strings.Contains(err.Error(), "--domain") {
		t.Fatalf("--from-checkpoint with --domain: %v, want a usage error naming --domain", err)
	}
	if _, err := runWhale(t, "run", "--headless", "--from-checkpoint", "r/01-weights", "--db", db); err == nil || isUsage(err) || !strings.Contains(err.Error(), "r/01-weights") {
		t.Fatalf("missing checkpoint: %v, want a plain error naming it", err)
	}
}

// TestRunFromCheckpoint keeps a checkpoint with a very small model (so the
// test takes seconds), then forks it through the CLI and checks the new
// run's start and that it records where it came from.
func TestRunFromCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mc := modeltest.Config()
	m, err := model.New(mc, kernels.NewCPU(), 3)
	if err != nil {
		t.Fatal(err)
	}
	dom, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := engine.Preset("tiny", "math")
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxRounds, cfg.MaxNewTokens = 1, 8
	tok := tokenizer.Bytes{}
	tmpl, err := chat.NewTemplate(tok)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.New(m, tok, nil, bundle.Generation{}, "test model")
	if err != nil {
		t.Fatal(err)
	}
	src, err := engine.NewWorkspace(db, nil).StartRun("src", cfg, engine.Env{Domain: dom, Bundle: b,
		Policy: chat.Tokenize(harnesses.NewOracle(dom), tmpl)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids, err := db.Checkpoints("src/")
	if err != nil || len(ids) == 0 {
		t.Fatalf("checkpoints: %v, %v", ids, err)
	}
	man, err := engine.ReadCheckpoint(db, ids[len(ids)-1])
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, err := runWhale(t, "run", "--headless", "--from-checkpoint", ids[len(ids)-1], "--db", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		RunID string `json:"run_id"`
	}
	lastJSONLine(t, out, &sum)
	if sum.RunID == "" || sum.RunID == "src" {
		t.Fatalf("forked run id %q", sum.RunID)
	}
	db, err = store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	o, err := engine.ForkedFrom(db, sum.RunID)
	if err != nil || o == nil || o.Checkpoint != ids[len(ids)-1] || o.Weights != man.Weights || o.Harness != man.Harness {
		t.Fatalf("origin of %s: %+v, %v; want checkpoint %s (weights %s, harness %s)", sum.RunID, o, err, ids[len(ids)-1], man.Weights, man.Harness)
	}
	db.Close()
	shown, err := runWhale(t, "show", sum.RunID, "--db", path)
	if err != nil || !strings.Contains(shown, "from checkpoint "+ids[len(ids)-1]) || !strings.Contains(shown, "\ncompute: ") {
		t.Fatalf("whale show of a forked run: %v\n%s", err, shown)
	}
}
