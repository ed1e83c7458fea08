package cuda

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProfileSortsByGPUTimeWithWaitsLast: the table leads with the ops
// that cost the GPU most, names break ties, and the host's waits (which
// overlap the ops' own host time) come last whatever their size.
func TestProfileSortsByGPUTimeWithWaitsLast(t *testing.T) {
	rows := []ProfileRow{
		{Op: "Add", Count: 3, GPU: 2 * time.Millisecond},
		{Op: hostWait, Count: 1, GPU: time.Hour},
		{Op: "Gemm NT 64x32x16", Count: 1, GPU: 5 * time.Millisecond},
		{Op: "Copy", Count: 1, GPU: 2 * time.Millisecond},
	}
	sortProfile(rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Op)
	}
	want := []string{"Gemm NT 64x32x16", "Add", "Copy", hostWait}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("order %q, want %q", got, want)
	}
}

// TestCombineCopiesTheProfile writes two benchmarks' profiles the way the
// CUDA benchmarks do and runs check/combine.py on them: the report must
// carry the training step's table as train_step_profile and the sampling
// tables as sampling_profile, every figure as written.
func TestCombineCopiesTheProfile(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to run check/combine.py")
	}
	dir := t.TempDir()
	tsv, report := filepath.Join(dir, "profile.tsv"), filepath.Join(dir, "report.json")
	var sb strings.Builder
	train := []ProfileRow{
		{Op: "Gemm NT 1024x1024x3072", Count: 84, GPU: 41500 * time.Microsecond, Host: 900 * time.Microsecond},
		{Op: "AttentionBackward", Count: 28, GPU: 120 * time.Millisecond, Host: 300 * time.Microsecond},
		{Op: hostWait, Count: 2, Host: 250 * time.Millisecond},
	}
	sortProfile(train)
	if err := WriteProfile(&sb, "BenchmarkTrainStep0p6B", train, 334*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	sample := []ProfileRow{{Op: "CacheWrite (batched)", Count: 1024, GPU: 8 * time.Millisecond, Host: 20 * time.Millisecond}}
	if err := WriteProfile(&sb, "BenchmarkSampleBenchSmall/batch=64", sample, 800*time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tsv, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// The other inputs are missing: combine.py fails those targets (exit
	// 1) and still writes the report.
	out, err := exec.Command(py, filepath.Join("check", "combine.py"), "--profile", tsv, "--out", report).CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("combine.py: %v\n%s", err, out)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, out)
	}
	type op struct {
		Op     string  `json:"op"`
		Count  int     `json:"count"`
		GPUms  float64 `json:"gpu_ms"`
		HostMs float64 `json:"host_ms"`
	}
	type table struct {
		Runs   int     `json:"runs"`
		WallMs float64 `json:"wall_ms"`
		GPUms  float64 `json:"gpu_ms_in_ops"`
		Ops    []op    `json:"ops"`
	}
	var r struct {
		Train  *table            `json:"train_step_profile"`
		Sample map[string]*table `json:"sampling_profile"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Train == nil {
		t.Fatalf("no train_step_profile in %s", data)
	}
	if r.Train.Runs != 1 || r.Train.WallMs != 334 || r.Train.GPUms != 161.5 || len(r.Train.Ops) != 3 {
		t.Errorf("train_step_profile %+v, want 1 run, wall 334 ms, 161.5 ms in ops, 3 rows", *r.Train)
	}
	if len(r.Train.Ops) == 3 {
		if o := r.Train.Ops[0]; o.Op != "AttentionBackward" || o.Count != 28 || o.GPUms != 120 || o.HostMs != 0.3 {
			t.Errorf("first row %+v, want AttentionBackward, 28 calls, 120 ms on the GPU, 0.3 ms on the host", o)
		}
		if o := r.Train.Ops[2]; o.Op != hostWait || o.HostMs != 250 {
			t.Errorf("last row %+v, want the host's waits, 250 ms", o)
		}
	}
	s := r.Sample["BenchmarkSampleBenchSmall/batch=64"]
	if s == nil || len(s.Ops) != 1 || s.Ops[0].Op != "CacheWrite (batched)" || s.Ops[0].Count != 1024 || s.WallMs != 800 {
		t.Errorf("sampling_profile %s, want batch=64's one row of 1024 batched cache writes over 800 ms", data)
	}
}
