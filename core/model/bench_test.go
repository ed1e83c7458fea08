package model

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Engine benchmarks (not tests): go test ./core/model -run XXX -bench Engine -benchtime 1x.
// Each iteration is one full measurement; numbers are reported as metrics.

func benchPreset(b *testing.B, name string) Config {
	b.Helper()
	cfg, err := Preset(name)
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func BenchmarkEngineTrainBenchSmall(b *testing.B) {
	cfg := benchPreset(b, "bench-small")
	for i := 0; i < b.N; i++ {
		tps, gf, err := BenchTrain(nil, cfg, 8, 128, 3*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(tps, "tokens/s")
		b.ReportMetric(gf, "GFLOP/s")
	}
}

func benchSample(b *testing.B, preset string, batch int, bf16 bool) {
	cfg := benchPreset(b, preset)
	for i := 0; i < b.N; i++ {
		tps, err := BenchSample(nil, cfg, batch, 16, 256, bf16)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(tps, "tokens/s")
		b.ReportMetric(tps*float64(WeightBytes(cfg, bf16))/1e9, "weightGB/s")
	}
}

// BenchmarkEngineSampleRuns times b.N generations of 256 tokens of
// bench-small on one model and one sampler (BenchSampleRuns) and reports
// their median and best tokens/s: the figure whale bench engine gives, for
// A/B runs of two builds on a noisy machine (-benchtime 20x: 20 runs).
func BenchmarkEngineSampleRuns(b *testing.B) {
	m, err := BenchModel(nil, benchPreset(b, "bench-small"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		batch int
		bf16  bool
	}{{"b1", 1, false}, {"b1bf16", 1, true}, {"b64", 64, false}} {
		b.Run(c.name, func(b *testing.B) {
			tps, err := BenchSampleRuns(m, c.batch, 16, 256, c.bf16, b.N)
			if err != nil {
				b.Fatal(err)
			}
			slices.Sort(tps)
			b.ReportMetric(tps[len(tps)/2], "median-tokens/s")
			b.ReportMetric(tps[len(tps)-1], "best-tokens/s")
		})
	}
}

func BenchmarkEngineSampleBenchSmallB1(b *testing.B)  { benchSample(b, "bench-small", 1, false) }
func BenchmarkEngineSampleBenchSmallB64(b *testing.B) { benchSample(b, "bench-small", 64, false) }
func BenchmarkEngineSample110MBF16B1(b *testing.B)    { benchSample(b, "110m", 1, true) }

// BenchmarkSampleTokenQwenVocab draws one token at temperature 1 from
// logits over Qwen's 151,936 ids: the per-token cost outside the model.
func BenchmarkSampleTokenQwenVocab(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(3 * rng.NormFloat64())
	}
	r := &Request{Temperature: 1}
	var sc sampleScratch
	for b.Loop() {
		sampleToken(logits, r, rng, &sc)
	}
}
