package main

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/experiments"
	"whale/core/model"
)

// TestEngineBenchReportsBounds: the engine bench names the width of the
// FMAs its peak was measured with and the read bandwidth, and gives every
// GEMM, the training step and the 110M sampling as a fraction of its
// bound, in the table and in the JSON.
func TestEngineBenchReportsBounds(t *testing.T) {
	r := engineBench{CPU: "test", Threads: 2, Kernels: "k", PeakGFLOPS: 400, PeakBits: 512, ReadGBPS: 20, ReadGBPS110M: 17.5,
		Gemm:         []gemmFigure{{M: 1024, K: 256, N: 256, Layout: "NN", GFLOPS: 300, OfPeak: 0.75}},
		Train:        rate{TokensPerS: 5000, GFLOPS: 100, OfBound: 0.25},
		SampleB1:     rate{TokensPerS: 3000, Reps: 7, MinTokensPerS: 2800, MaxTokensPerS: 3300},
		SampleB1BF16: rate{TokensPerS: 5000},
		Sample110MB1: rate{TokensPerS: 80, GBPS: 16, OfBound: 0.8, OfWeightsRead: 16 / 17.5}}
	var out bytes.Buffer
	printEngineBench(&out, r)
	for _, want := range []string{"400.0 GFLOP/s (512-bit FMAs)", "batch 1: 3000 tokens/s (median of 7: 2800–3300)\n", "batch 1, bf16 weights: 5000 tokens/s", "read       20.0 GB/s over 64 MiB, 17.5 GB/s over", "300.0   75.0 %",
		"100.0 GFLOP/s (25.0 % of peak)", "16.0 GB/s, 80.0 % of the 64 MiB read, 91.4 % of the weights-sized one"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := printJSON(&out, r); err != nil {
		t.Fatal(err)
	}
	var j map[string]any
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"peak_gflops", "peak_bits", "read_gbps", "read_gbps_110m_weights", "sample_b1_bf16"} {
		if _, ok := j[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out.String())
		}
	}
	if s := j["sample_b1"].(map[string]any); s["reps"] != 7.0 || s["min_tokens_per_s"] != 2800.0 || s["max_tokens_per_s"] != 3300.0 {
		t.Errorf("sample_b1 = %v, want reps 7 from 2800 to 3300", s)
	}
	if g := j["gemm"].([]any)[0].(map[string]any); g["of_peak"] != 0.75 {
		t.Errorf("gemm of_peak = %v, want 0.75", g["of_peak"])
	}
	if s := j["sample_110m_b1"].(map[string]any); s["of_bound"] != 0.8 || s["of_read_weights"] != 16/17.5 {
		t.Errorf("sample_110m_b1 of_bound = %v, of_read_weights = %v, want 0.8 and %v", s["of_bound"], s["of_read_weights"], 16/17.5)
	}
}

// On a device the table names the backend and its GPU and gives no CPU
// bound or fraction.
func TestEngineBenchOnADeviceGivesNoCPUBounds(t *testing.T) {
	r := engineBench{Backend: "cuda/float32", Device: "NVIDIA H200", CPU: "host", Threads: 2,
		Gemm:         []gemmFigure{{M: 1024, K: 256, N: 256, Layout: "NN", GFLOPS: 30000}},
		Train:        rate{TokensPerS: 90000, GFLOPS: 2000},
		Sample110MB1: rate{TokensPerS: 900, GBPS: 198}}
	var out bytes.Buffer
	printEngineBench(&out, r)
	table := out.String()
	for _, want := range []string{"backend    cuda/float32 on NVIDIA H200", "30000.0  \n", "2000.0 GFLOP/s\n", "900.0 tokens/s (198.0 GB/s)\n"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	for _, absent := range []string{"FMA peak", "%"} {
		if strings.Contains(table, absent) {
			t.Errorf("table has %q:\n%s", absent, table)
		}
	}
}

func TestBenchRolloutsRefusesAnUnknownDomain(t *testing.T) {
	if _, err := runWhale(t, "bench", "rollouts", "--domain", "nope"); !isUsage(err) {
		t.Fatalf("--domain nope: %v, want a usage error", err)
	}
}

// TestBenchModelMeasuresASmallShape: `whale bench model` on a small shape
// reports a sampling rate against the read bound, each run paired with its
// own sweep and the figures their medians, and a LoRA step whose weights
// stayed frozen, with its adapters' size, in the JSON.
func TestBenchModelMeasuresASmallShape(t *testing.T) {
	out, err := runWhale(t, "bench", "model", "--preset", "bench-small", "--gen", "8", "--rounds", "2", "--tokens", "16", "--batch", "2", "--rank", "4", "--steps", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r modelBench
	lastJSONLine(t, out, &r)
	cfg, _ := model.Preset("bench-small")
	// rank 4 on every projection: 4·(in+out) per projection and layer.
	d, hd := cfg.HiddenSize, cfg.Dim()
	q, kv, f := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd, cfg.IntermediateSize
	want := cfg.NumHiddenLayers * 4 * ((d + q) + 2*(d+kv) + (q + d) + 3*(d+f))
	if r.Params != cfg.NumParams() || r.Sample.TokensPerS <= 0 || r.Sample.OfBound <= 0 || r.Sample.OfWeightsRead <= 0 || r.ReadGBPSWeights <= 0 || r.LoRA.StepS <= 0 ||
		!r.LoRA.WeightsFrozen || r.LoRA.Adapters != want || r.LoRA.B != 2 || r.LoRA.T != 16 {
		t.Fatalf("bench model report %+v (want %d adapter parameters)", r, want)
	}
	if len(r.Rounds) != 2 || r.Sample.Reps != 2 {
		t.Fatalf("bench model --rounds 2: %d rounds, %d runs", len(r.Rounds), r.Sample.Reps)
	}
	wb := float64(model.WeightBytes(cfg, true)) / 1e9
	for i, s := range r.Rounds {
		if s.ReadGBPSWeights <= 0 || math.Abs(s.OfWeightsRead-s.TokensPerS*wb/s.ReadGBPSWeights) > 1e-9*s.OfWeightsRead {
			t.Fatalf("round %d: %+v (weights %.4f GB)", i+1, s, wb)
		}
	}
	// Two rounds: each median is the mean of the two.
	a, b := r.Rounds[0], r.Rounds[1]
	for _, c := range [][2]float64{{r.Sample.TokensPerS, (a.TokensPerS + b.TokensPerS) / 2}, {r.Sample.OfWeightsRead, (a.OfWeightsRead + b.OfWeightsRead) / 2},
		{r.ReadGBPSWeights, (a.ReadGBPSWeights + b.ReadGBPSWeights) / 2}} {
		if math.Abs(c[0]-c[1]) > 1e-9*c[1] {
			t.Fatalf("a median %v, want %v (rounds %+v)", c[0], c[1], r.Rounds)
		}
	}
	if _, err := runWhale(t, "bench", "model", "--preset", "bench-small", "--rounds", "0"); err == nil || !strings.Contains(err.Error(), "--rounds") {
		t.Fatalf("--rounds 0: %v", err)
	}
	// Over a bfloat16 base the same step runs, and the base stays as
	// FreezeBF16 rounded it.
	out, err = runWhale(t, "bench", "model", "--preset", "bench-small", "--gen", "4", "--tokens", "16", "--batch", "2", "--rank", "4", "--steps", "1", "--bf16-base", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r16 modelBench
	lastJSONLine(t, out, &r16)
	if !r16.LoRA.BF16Base || !r16.LoRA.WeightsFrozen || r16.LoRA.StepS <= 0 || r16.LoRA.Adapters != want {
		t.Fatalf("bench model --bf16-base report %+v", r16.LoRA)
	}
	if _, err := runWhale(t, "bench", "model", "--preset", "nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown preset: %v", err)
	}
}

// A backend this binary lacks (cuda without the tag) or cannot open (no
// GPU) is a usage error naming --backend, before anything runs.
func TestBackendFlagRefusesWhatItCannotOpen(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "engine", "--backend", "cuda"},
		{"run", "--headless", "--domain", "math", "--backend", "cuda", "--db", filepath.Join(t.TempDir(), "w.db")},
		{"resume", "nope", "--headless", "--backend", "tpu", "--db", filepath.Join(t.TempDir(), "w.db")},
		{"bench", "conditions", "--domain", "math", "--preset", "tiny", "--backend", "cuda", "--db", filepath.Join(t.TempDir(), "b.db")},
		{"sweep", "--domain", "math", "--preset", "tiny", "--backend", "tpu", "--db", filepath.Join(t.TempDir(), "s.db")},
		{"bench", "rollouts", "--domain", "math", "--backend", "cuda"},
	} {
		_, err := runWhale(t, args...)
		if !isUsage(err) || !strings.Contains(err.Error(), "--backend: ") {
			t.Errorf("%v: %v, want a usage error naming --backend", args, err)
		}
	}
}

// TestSampleRateIsTheMedianOfItsGenerations: sampleRate generates reps
// times and reports the middle figure with the spread.
func TestSampleRateIsTheMedianOfItsGenerations(t *testing.T) {
	cfg, err := model.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.BenchModel(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := experiments.SampleRate(m, 2, 8, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reps != 3 || !(0 < r.MinTokensPerS && r.MinTokensPerS <= r.TokensPerS && r.TokensPerS <= r.MaxTokensPerS) {
		t.Errorf("sampleRate = %+v: want 3 generations, 0 < min <= median <= max", r)
	}
}
