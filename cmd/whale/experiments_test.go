package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/pretrain"
	"whale/kernels"
)

func TestBenchAndSweepMisuse(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "conditions"},
		{"bench", "conditions", "--domain", "all", "--data", "x.jsonl", "--format", "gsm8k"},
		{"bench", "conditions", "--domain", "math", "--data", "x.jsonl"},
		{"bench", "conditions", "--domain", "math", "--seeds", "0"},
		{"bench", "conditions", "--domain", "math", "--preset", "huge"},
		{"bench", "conditions", "--domain", "math", "--budget", "-3"},
		{"bench", "conditions", "--domain", "math", "--conditions", "magic", "--db", filepath.Join(t.TempDir(), "w.db")},
		{"sweep", "--domain", "all"},
	} {
		if _, err := runWhale(t, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// A tiny random model makes the whole bench path fast: runs, report files,
// a rerun that only reads, and the sweep.
func TestBenchConditionsAndSweepEndToEnd(t *testing.T) {
	dir := t.TempDir()
	modelPath := tinyModelFile(t, dir)
	db, out := filepath.Join(dir, "w.db"), filepath.Join(dir, "results")
	args := []string{"bench", "conditions", "--domain", "math", "--preset", "tiny", "--seeds", "1", "--budget", "16",
		"--conditions", "weight-only,harness-only", "--workers", "2", "--model", modelPath, "--db", db, "--out", out}
	stdout, err := runWhale(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "weight-only") || !strings.Contains(stdout, "harness-only") {
		t.Fatalf("bench table:\n%s", stdout)
	}
	for _, f := range []string{"RESULTS.md", "results.csv", "math.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Fatalf("report file: %v", err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(out, "results.csv"))
	if !strings.HasPrefix(string(csv), "condition,domain,seed,best_test_mean_at_8,rollouts") || strings.Count(string(csv), "\n") != 3 {
		t.Fatalf("results.csv:\n%s", csv)
	}
	if _, err := runWhale(t, args...); err != nil {
		t.Fatalf("rerun of a finished bench: %v", err)
	}
	runs, err := runWhale(t, "runs", "--db", db)
	if err != nil || !strings.Contains(runs, "bench-math-weight-only-b16-s1") {
		t.Fatalf("runs after the bench: %v\n%s", err, runs)
	}
	var g struct {
		Side   string     `json:"side"`
		CI95   [2]float64 `json:"ci95"`
		Advice string     `json:"advice"`
	}
	stdout, err = runWhale(t, "sweep", "--domain", "math", "--preset", "tiny", "--budget", "16", "--model", modelPath, "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	lastJSONLine(t, stdout, &g)
	if g.Side == "" || g.Advice == "" || g.CI95[0] > g.CI95[1] {
		t.Fatalf("sweep: %+v", g)
	}
}

// tinyModelFile saves a tiny random model in dir: the bench path runs
// fast on it.
func tinyModelFile(t *testing.T, dir string) string {
	t.Helper()
	m, err := model.New(pretrain.TinyConfig(), kernels.NewCPU(), 7)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tiny.safetensors")
	if err := ckpt.SaveModel(path, m, ckpt.BF16, nil); err != nil {
		t.Fatal(err)
	}
	return path
}
