package model

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"whale/kernels"
)

// Speed measurements for `whale bench engine`. They build a model of cfg
// with seeded random weights on a backend (the float32 CPU one for nil);
// results are wall clock and depend on whatever else runs on the machine.
// An asynchronous backend (kernels.Syncer) is synchronised before a
// clock is read.

// TrainFLOPsPerToken is the conventional training cost of one token:
// 6·N for the parameter products (forward 2N, backward 4N) plus
// 12·L·T·d for attention scores and mixing over a context of T, d the
// attention width (heads·head_dim).
func TrainFLOPsPerToken(cfg Config, T int) float64 {
	return 6*float64(cfg.NumParams()) + 12*float64(cfg.NumHiddenLayers*T*cfg.NumAttentionHeads*cfg.Dim())
}

// LoRAFLOPsPerToken is a LoRA step's cost of one token: 4·N for the
// forward pass and the input gradient (the frozen weights get no weight
// gradient; the adapters' products are left out) plus attention's
// 12·L·T·d as in TrainFLOPsPerToken.
func LoRAFLOPsPerToken(cfg Config, T int) float64 {
	return 4*float64(cfg.NumParams()) + 12*float64(cfg.NumHiddenLayers*T*cfg.NumAttentionHeads*cfg.Dim())
}

// WeightBytes is the size of the weights one decoding step streams: every
// parameter once (a tied head counted once), 2 bytes each in bf16, 4 in
// float32.
func WeightBytes(cfg Config, bf16 bool) int64 {
	if bf16 {
		return 2 * int64(cfg.NumParams())
	}
	return 4 * int64(cfg.NumParams())
}

// BenchModel is a model of cfg with seeded random weights on be (nil: the
// float32 CPU backend), for the measurements below.
func BenchModel(be kernels.Backend, cfg Config) (*Model, error) {
	if be == nil {
		be = kernels.NewCPU()
	}
	m, err := New(cfg, be, 1)
	if err != nil {
		return nil, fmt.Errorf("model: bench: %w", err)
	}
	return m, nil
}

// benchBatch is B random sequences of T+1 tokens, every target counted.
func benchBatch(V, B, T int) []Sequence {
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]Sequence, B)
	for i := range batch {
		batch[i] = Sequence{Tokens: make([]int32, T+1), Mask: make([]float32, T+1)}
		for j := range batch[i].Tokens {
			batch[i].Tokens[j] = int32(rng.IntN(V))
			batch[i].Mask[j] = 1
		}
	}
	return batch
}

// BenchLoRAStep takes one warm-up optimizer step of m's adapters (LoRA
// must be enabled) on B random sequences of T+1 tokens, then steps more,
// and returns the mean wall time of those steps. The activations are
// bounded by activationBytes (TrainConfig.ActivationBytes).
func BenchLoRAStep(m *Model, B, T, steps int, activationBytes int64) (time.Duration, error) {
	if B <= 0 || T <= 0 || T > m.Config.MaxPositionEmbeddings || steps < 1 {
		return 0, fmt.Errorf("model: bench LoRA: B=%d T=%d steps=%d outside 1..%d positions", B, T, steps, m.Config.MaxPositionEmbeddings)
	}
	if m.lora == nil {
		return 0, errors.New("model: bench LoRA: enable the adapters first")
	}
	tc := DefaultTrainConfig()
	tc.ActivationBytes = activationBytes
	tr, err := NewTrainer(m, tc)
	if err != nil {
		return 0, err
	}
	batch := benchBatch(m.Config.VocabSize, B, T)
	if _, err := tr.Step([][]Sequence{batch}); err != nil {
		return 0, err
	}
	start := time.Now()
	for range steps {
		if _, err := tr.Step([][]Sequence{batch}); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(steps), nil
}

// BenchTrain runs training steps of B sequences of T+1 tokens (T
// predictions each, every target counted) for at least minDur after one
// warm-up step, and returns trained tokens per second and achieved
// GFLOP/s (TrainFLOPsPerToken).
func BenchTrain(be kernels.Backend, cfg Config, B, T int, minDur time.Duration) (tokensPerS, gflops float64, err error) {
	if B <= 0 || T <= 0 || T > cfg.MaxPositionEmbeddings {
		return 0, 0, fmt.Errorf("model: bench train: B=%d T=%d outside 1..%d positions", B, T, cfg.MaxPositionEmbeddings)
	}
	m, err := BenchModel(be, cfg)
	if err != nil {
		return 0, 0, err
	}
	tr, err := NewTrainer(m, DefaultTrainConfig())
	if err != nil {
		return 0, 0, err
	}
	batch := benchBatch(cfg.VocabSize, B, T)
	step := func() error {
		_, err := tr.Step([][]Sequence{batch})
		return err
	}
	if err := step(); err != nil {
		return 0, 0, err
	}
	if err := kernels.Sync(m.be); err != nil {
		return 0, 0, err
	}
	start, steps := time.Now(), 0
	for steps < 2 || time.Since(start) < minDur {
		if err := step(); err != nil {
			return 0, 0, err
		}
		steps++
	}
	if err := kernels.Sync(m.be); err != nil {
		return 0, 0, err
	}
	tokensPerS = float64(steps*B*T) / time.Since(start).Seconds()
	return tokensPerS, tokensPerS * TrainFLOPsPerToken(cfg, T) / 1e9, nil
}

// BenchSample generates gen tokens after a random prompt of prompt tokens
// for batch sequences at once (temperature 1, no stop tokens, no prefix
// reuse) and returns generated tokens per second, prefill included in the
// time but not in the count.
func BenchSample(be kernels.Backend, cfg Config, batch, prompt, gen int, bf16 bool) (tokensPerS float64, err error) {
	m, err := BenchModel(be, cfg)
	if err != nil {
		return 0, err
	}
	return BenchSampleModel(m, batch, prompt, gen, bf16)
}

// BenchSampleModel is BenchSample on model m.
func BenchSampleModel(m *Model, batch, prompt, gen int, bf16 bool) (tokensPerS float64, err error) {
	tps, err := BenchSampleRuns(m, batch, prompt, gen, bf16, 1)
	if err != nil {
		return 0, err
	}
	return tps[0], nil
}

// BenchSampleRuns is BenchSampleModel timed runs times on one sampler (its
// weights packed and its scratch sized once, by a short warm-up): the
// tokens/s of each run, in order.
func BenchSampleRuns(m *Model, batch, prompt, gen int, bf16 bool, runs int) ([]float64, error) {
	return BenchSampleWith(m, SamplerOptions{BF16: bf16, PrefixCacheBytes: -1}, batch, prompt, gen, runs, nil)
}

// BenchSampleWith is BenchSampleRuns on a sampler with opts (bfloat16 KV
// caches, say). before, when not nil, runs before each timed run, outside
// its time (a measurement to pair with it, say).
func BenchSampleWith(m *Model, opts SamplerOptions, batch, prompt, gen, runs int, before func()) ([]float64, error) {
	cfg := m.Config
	if batch <= 0 || prompt <= 0 || gen <= 0 || prompt+gen > cfg.MaxPositionEmbeddings || runs <= 0 {
		return nil, fmt.Errorf("model: bench sample: batch=%d prompt=%d gen=%d (context %d) runs=%d", batch, prompt, gen, cfg.MaxPositionEmbeddings, runs)
	}
	s := NewSampler(m, opts)
	rng := rand.New(rand.NewPCG(3, 4))
	reqs := make([]Request, batch)
	for i := range reqs {
		p := make([]int32, prompt)
		for j := range p {
			p[j] = int32(rng.IntN(cfg.VocabSize))
		}
		reqs[i] = Request{Key: fmt.Sprint(i), Prompt: p, MaxNewTokens: gen, Temperature: 1, Seed: 1}
	}
	// Warm-up: one short generation sizes the scratch and the bf16 copy.
	warm := make([]Request, len(reqs))
	for i, r := range reqs {
		r.MaxNewTokens = 2
		warm[i] = r
	}
	if _, err := s.Generate(context.Background(), warm); err != nil {
		return nil, err
	}
	tps := make([]float64, 0, runs)
	for range runs {
		if before != nil {
			before()
		}
		start := time.Now()
		out, err := s.Generate(context.Background(), reqs)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, c := range out {
			n += len(c.Tokens)
		}
		tps = append(tps, float64(n)/time.Since(start).Seconds())
	}
	return tps, nil
}
