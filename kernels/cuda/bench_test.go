//go:build cuda

package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"whale/core/model"
	"whale/kernels"
	"whale/kernels/cuda"
)

// Speed of the CUDA backend, for device-check.sh to set beside PyTorch's
// figures on the same GPU (torch_ref.py) and the CPU backend's figures
// from the build machine. Benchmarks report, never assert: a target is
// judged by the script from both sides' numbers. Each one synchronises
// the backend before its clock stops, as the ops only queue work.

// gemmSizes are the model's K and N in `whale bench engine` (M = 1024).
var gemmSizes = []int{256, 512, 704, 768}

// BenchmarkGemm: f32 Gemm in NN, NT and TN and GemmBF16NT (bf16 b) at
// M = 1024 × K, N in gemmSizes, and at 4096³. Sub-benchmarks are named
// dtype/layout/MxKxN; the figure is GFLOP/s (2·M·K·N a product).
func BenchmarkGemm(b *testing.B) {
	be := device(b)
	type shape struct{ m, k, n int }
	var shapes []shape
	for _, k := range gemmSizes {
		for _, n := range gemmSizes {
			shapes = append(shapes, shape{1024, k, n})
		}
	}
	shapes = append(shapes, shape{4096, 4096, 4096})
	for _, l := range []kernels.Layout{kernels.NN, kernels.NT, kernels.TN} {
		for _, s := range shapes {
			b.Run(fmt.Sprintf("f32/%s/%dx%dx%d", l, s.m, s.k, s.n), func(b *testing.B) { benchGemm(b, be, l, s.m, s.k, s.n, false) })
		}
	}
	for _, s := range shapes {
		b.Run(fmt.Sprintf("bf16/NT/%dx%dx%d", s.m, s.k, s.n), func(b *testing.B) { benchGemm(b, be, kernels.NT, s.m, s.k, s.n, true) })
	}
	if ok, err := be.BF16TensorCores(); !ok {
		b.Logf("bf16 products fell back to widened float32 weights: %v", err)
	}
}

func benchGemm(b *testing.B, be *cuda.Backend, l kernels.Layout, m, k, n int, bf16 bool) {
	r := rand.New(rand.NewPCG(uint64(m), uint64(k)<<32|uint64(n)))
	load := func(size int) kernels.Tensor {
		h := make([]float32, size)
		for i := range h {
			h[i] = 2*r.Float32() - 1
		}
		t := be.Alloc(size)
		be.Load(t, h)
		return t
	}
	x, w, out := load(m*k), load(k*n), be.Alloc(m*n)
	defer func() { be.Free(x); be.Free(w); be.Free(out) }()
	run := func() { be.Gemm(l, out, x, w, m, k, n, false) }
	if bf16 {
		wb := be.AllocBF16(k * n)
		defer be.Free(wb)
		be.ToBF16(wb, w)
		run = func() { be.GemmBF16NT(out, x, wb, m, k, n, false) }
	}
	run() // warm-up: handles, heuristics, first-launch costs
	syncOrFatal(b, be)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	syncOrFatal(b, be)
	b.StopTimer()
	b.ReportMetric(2*float64(m)*float64(k)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func syncOrFatal(b *testing.B, be *cuda.Backend) {
	if err := be.Sync(); err != nil {
		b.Fatalf("sync: %v", err)
	}
}

// envInt reads a positive integer setting, or def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// trainBench is a model and trainer kept across the calls the testing
// package makes of one benchmark (b.N = 1, then more): building the 0.6B
// model takes seconds and its memory is better allocated once.
type trainBench struct {
	cfg   model.Config
	tr    *model.Trainer
	batch []model.Sequence
}

var trainBenches = map[string]*trainBench{}

// BenchmarkTrainStep0p6B: one optimizer step of the Qwen3-0.6B shape
// (random weights, f32, AdamW, clipping) on WHALE_BENCH_B sequences
// (default 4) of WHALE_BENCH_T predictions (default 256), every target
// counted; torch_ref.py times the same model, batch and length in eager
// PyTorch. Every layer's activations are kept (ActivationBytes −1), as
// eager PyTorch keeps them, unless WHALE_BENCH_ACT_MB bounds them.
func BenchmarkTrainStep0p6B(b *testing.B) {
	benchTrainStep(b, "qwen3-0.6b", envInt(b, "WHALE_BENCH_B", 4), envInt(b, "WHALE_BENCH_T", 256))
}

// BenchmarkTrainStepBenchSmall: the engine bench's training step
// (bench-small, B 8, T 128), comparable with `whale bench engine`'s
// train figure of the CPU.
func BenchmarkTrainStepBenchSmall(b *testing.B) {
	benchTrainStep(b, "bench-small", 8, 128)
}

func benchTrainStep(b *testing.B, preset string, B, T int) {
	be := device(b)
	key := fmt.Sprintf("%s/B%d/T%d", preset, B, T)
	tb := trainBenches[key]
	if tb == nil {
		cfg, err := model.Preset(preset)
		if err != nil {
			b.Fatal(err)
		}
		m, err := model.New(cfg, be, 1)
		if err != nil {
			b.Fatal(err)
		}
		tc := model.DefaultTrainConfig()
		tc.ActivationBytes = -1
		if mb := os.Getenv("WHALE_BENCH_ACT_MB"); mb != "" {
			tc.ActivationBytes = int64(envInt(b, "WHALE_BENCH_ACT_MB", 1)) << 20
		}
		tr, err := model.NewTrainer(m, tc)
		if err != nil {
			b.Fatal(err)
		}
		tb = &trainBench{cfg: cfg, tr: tr, batch: randomBatch(cfg.VocabSize, B, T)}
		if _, err := tr.Step([][]model.Sequence{tb.batch}); err != nil { // warm-up
			b.Fatal(err)
		}
		syncOrFatal(b, be)
		trainBenches[key] = tb
	}
	profileReset(b, be)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tb.tr.Step([][]model.Sequence{tb.batch}); err != nil {
			b.Fatal(err)
		}
	}
	syncOrFatal(b, be)
	b.StopTimer()
	profilePrint(b, be, b.Elapsed(), b.N)
	s := b.Elapsed().Seconds()
	b.ReportMetric(1e3*s/float64(b.N), "ms/step")
	b.ReportMetric(float64(b.N*B*T)/s, "tokens/s")
	b.ReportMetric(float64(b.N*B*T)*model.TrainFLOPsPerToken(tb.cfg, T)/s/1e9, "GFLOP/s")
	b.ReportMetric(float64(tb.cfg.NumParams()), "params")
}

// randomBatch is B random sequences of T+1 tokens, every target counted
// (what model.BenchTrain trains on).
func randomBatch(V, B, T int) []model.Sequence {
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]model.Sequence, B)
	for i := range batch {
		batch[i] = model.Sequence{Tokens: make([]int32, T+1), Mask: make([]float32, T+1)}
		for j := range batch[i].Tokens {
			batch[i].Tokens[j] = int32(rng.IntN(V))
			batch[i].Mask[j] = 1
		}
	}
	return batch
}

// BenchmarkSampleBenchSmall: generated tokens/s of bench-small at batch 64
// and 1 with `whale bench engine`'s settings (16-token random prompts, 256
// new tokens, temperature 1, float32 weights, prefill in the time), the
// figure device-check.sh divides by the CPU backend's from the build
// machine.
func BenchmarkSampleBenchSmall(b *testing.B) {
	be := device(b)
	cfg, err := model.Preset("bench-small")
	if err != nil {
		b.Fatal(err)
	}
	if ok, err := be.BatchedCacheWrites(); !ok {
		b.Logf("cache writes launch one by one: %v", err)
	}
	for _, batch := range []int{64, 1} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			var sum float64
			profileReset(b, be)
			for i := 0; i < b.N; i++ {
				tps, err := model.BenchSample(be, cfg, batch, 16, 256, false)
				if err != nil {
					b.Fatal(err)
				}
				sum += tps
			}
			profilePrint(b, be, b.Elapsed(), b.N)
			b.ReportMetric(sum/float64(b.N), "tokens/s")
		})
	}
}

// profileReset starts a benchmark's profile afresh (when the backend
// profiles: WHALE_CUDA_PROFILE=1).
func profileReset(b *testing.B, be *cuda.Backend) {
	if !be.Profiling() {
		return
	}
	if err := be.ProfileReset(); err != nil {
		b.Fatalf("profile: %v", err)
	}
}

// profilePrint appends the benchmark's profile, one "cuda-profile" line
// per op (check/combine.py reads them), to the file WHALE_CUDA_PROFILE_OUT
// names, or else logs its first rows (a benchmark's log is cut at ten
// lines, and printing to stdout would split its result line). The rows
// cover the wall time of runs runs; with model.BenchSample that includes
// the sampler's set-up, which its tokens/s leaves out.
func profilePrint(b *testing.B, be *cuda.Backend, wall time.Duration, runs int) {
	if !be.Profiling() {
		return
	}
	rows, err := be.Profile()
	if err != nil {
		b.Fatalf("profile: %v", err)
	}
	path := os.Getenv("WHALE_CUDA_PROFILE_OUT")
	if path == "" {
		var sb strings.Builder
		if err := cuda.WriteProfile(&sb, b.Name(), rows[:min(len(rows), 8)], wall, runs); err != nil {
			b.Fatalf("profile: %v", err)
		}
		b.Log("profile (the first rows; WHALE_CUDA_PROFILE_OUT=file for all):\n" + sb.String())
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatalf("profile: %v", err)
	}
	err = cuda.WriteProfile(f, b.Name(), rows, wall, runs)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatalf("profile: write %s: %v", path, err)
	}
}
