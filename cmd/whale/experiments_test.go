package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
		{"bench", "conditions", "--domain", "math", "--budget", "30", "--train-calls", "10"},
		{"bench", "conditions", "--domain", "math", "--train-calls", "-1"},
		{"bench", "conditions", "--domain", "math,poetry"},
		{"bench", "conditions", "--domain", "math", "--accountings", "total", "--db", filepath.Join(t.TempDir(), "w.db")},
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
	// The store gone (a fresh clone), the record beside the report still
	// holds both runs: the same table and results.csv, nothing rerun.
	if n := strings.Count(readFile(t, filepath.Join(out, "runs.jsonl")), "\n"); n != 2 {
		t.Fatalf("record holds %d runs, want 2", n)
	}
	fresh := append(slices.Clone(args[:len(args)-4]), "--db", filepath.Join(dir, "fresh.db"), "--out", out)
	again, err := runWhale(t, fresh...)
	if err != nil {
		t.Fatal(err)
	}
	if again != stdout || readFile(t, filepath.Join(out, "results.csv")) != string(csv) {
		t.Fatalf("from the record:\n%s\nfrom the store:\n%s", again, stdout)
	}
	if md := readFile(t, filepath.Join(out, "RESULTS.md")); !strings.Contains(md, "2 runs were read from the record runs.jsonl") {
		t.Fatalf("RESULTS.md does not say the runs came from the record:\n%s", md)
	}
	if runs, _ := runWhale(t, "runs", "--db", filepath.Join(dir, "fresh.db")); strings.Contains(runs, "bench-math") {
		t.Fatalf("the fresh store ran the bench again:\n%s", runs)
	}
	// A record whose runs came from machines with different kernels says
	// so in the report.
	rec := readFile(t, filepath.Join(out, "runs.jsonl"))
	first, rest, _ := strings.Cut(rec, "\n")
	mixed := regexp.MustCompile(`"kernels":"[^"]*"`).ReplaceAllString(first, `"kernels":"other kernels"`) + "\n" + rest
	if err := os.WriteFile(filepath.Join(out, "runs.jsonl"), []byte(mixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runWhale(t, append(slices.Clone(args[:len(args)-4]), "--db", filepath.Join(dir, "fresh2.db"), "--out", out)...); err != nil {
		t.Fatal(err)
	}
	if md := readFile(t, filepath.Join(out, "RESULTS.md")); !strings.Contains(md, "different builds or kernels (1 from build") || !strings.Contains(md, ", other kernels") {
		t.Fatalf("RESULTS.md does not name the record's two origins:\n%s", md)
	}
	// --record - keeps none: the fresh store alone runs both again.
	none := t.TempDir()
	if _, err := runWhale(t, append(slices.Clone(args[:len(args)-4]), "--db", filepath.Join(none, "n.db"), "--out", none, "--record", "-")...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(none, "runs.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("--record - wrote a record: %v", err)
	}
	if runs, _ := runWhale(t, "runs", "--db", filepath.Join(none, "n.db")); !strings.Contains(runs, "bench-math-weight-only-b16-s1") {
		t.Fatalf("--record -: the runs were not run:\n%s", runs)
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

// The paper's protocol end to end: both accountings, the vote-only
// control, and every report naming the ledgers.
func TestBenchConditionsOnThePapersLedgers(t *testing.T) {
	dir := t.TempDir()
	modelPath := tinyModelFile(t, dir)
	out := filepath.Join(dir, "results")
	stdout, err := runWhale(t, "bench", "conditions", "--domain", "math", "--preset", "tiny", "--seeds", "1", "--train-calls", "16", "--search-calls", "16",
		"--conditions", "weight-only,harness-only,vote-only,whale-fixed", "--workers", "2", "--model", modelPath, "--db", filepath.Join(dir, "w.db"), "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "vote-only") {
		t.Fatalf("bench table:\n%s", stdout)
	}
	csv := readFile(t, filepath.Join(out, "results.csv"))
	header, _, _ := strings.Cut(csv, "\n")
	if !strings.Contains(header, ",accounting,train_calls,search_calls,test_calls_per_episode") {
		t.Fatalf("results.csv header: %s", header)
	}
	if strings.Count(csv, ",paper,") != 4 || strings.Count(csv, ",equal-total,") != 4 {
		t.Fatalf("results.csv: want 4 paper and 4 equal-total rows:\n%s", csv)
	}
	md := readFile(t, filepath.Join(out, "RESULTS.md"))
	for _, want := range []string{"# Accounting: paper", "# Accounting: equal-total", "16 training calls", "test-time calls per test episode", "vote-only = h0 with SAMPLES = k"} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
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

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
