package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"whale/kernels"
)

// gradVariants cover the architecture switches: GQA with qk-norm, bias and
// an untied head (tiny); Qwen2 (no qk-norm) with bias and a tied head;
// Qwen3 multi-head, no bias, tied.
func gradVariants(t *testing.T) map[string]Config {
	tiny, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	q2 := tiny
	q2.ModelType, q2.TieWordEmbeddings, q2.HeadDim = "qwen2", true, 0
	mha := tiny
	mha.NumKeyValueHeads, mha.AttentionBias, mha.TieWordEmbeddings = 4, false, true
	return map[string]Config{"qwen3-gqa-bias-untied": tiny, "qwen2-bias-tied": q2, "qwen3-mha-tied": mha}
}

// testBatch returns sequences of different lengths with prompt tokens
// masked out and fractional weights, so padding and masking are exercised.
func testBatch(V int, seed uint64) []Sequence {
	rng := rand.New(rand.NewPCG(seed, 99))
	var seqs []Sequence
	for _, n := range []int{7, 4, 9} {
		q := Sequence{Tokens: make([]int32, n), Mask: make([]float32, n)}
		for i := range q.Tokens {
			q.Tokens[i] = int32(rng.IntN(V))
			if i >= 2 {
				q.Mask[i] = 1
			}
		}
		q.Mask[n-1] = 0.5
		seqs = append(seqs, q)
	}
	return seqs
}

// randomize replaces the init with larger random values (norm weights near
// 1, biases non-zero) so every gradient path carries signal.
func randomize(m *Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 5))
	v := m.ParamValues()
	for _, p := range m.params {
		for i := p.Offset; i < p.Offset+p.Len; i++ {
			switch p.kind {
			case kindNorm:
				v[i] = float32(1 + 0.2*rng.NormFloat64())
			default:
				v[i] = float32(0.3 * rng.NormFloat64())
			}
		}
	}
	if err := m.SetParamValues(v); err != nil {
		panic(err)
	}
}

func gradients(t *testing.T, m *Model, seqs []Sequence) []float64 {
	t.Helper()
	g32, _ := gradientsWithin(t, m, seqs, -1)
	g := make([]float64, len(g32))
	for i, v := range g32 {
		g[i] = float64(v)
	}
	return g
}

// TestGradientFiniteDifferences compares every parameter tensor's
// gradient, on a sample of its entries, with central differences of the
// float64 loss. h = 1e-5 gives truncation error O(h²) ≈ 1e-10 relative and
// rounding ≈ 1e-16·|L|/h ≈ 1e-11 absolute, so the bound ‖a−n‖ ≤ 1e-6·‖n‖ +
// 1e-9 is tight: the absolute floor only admits gradients that are zero
// analytically (a k_proj bias without qk-norm shifts every score of a row
// equally, which softmax ignores).
func TestGradientFiniteDifferences(t *testing.T) {
	// Force the output head to run in chunks of 5 rows.
	defer func(v int) { headLogits = v }(headLogits)
	headLogits = 5 * 19
	for name, cfg := range gradVariants(t) {
		t.Run(name, func(t *testing.T) {
			be := kernels.NewCPU64()
			m, err := New(cfg, be, 1)
			if err != nil {
				t.Fatal(err)
			}
			randomize(m, 2)
			seqs := testBatch(cfg.VocabSize, 3)
			g := gradients(t, m, seqs)
			total, _ := m.maskSum(seqs)
			p := m.pack(seqs, 1/total)
			checkFiniteDifferences(t, m, p, g, m.params, m.arena, 8, rand.New(rand.NewPCG(4, 4)), false)
		})
	}
}

// checkFiniteDifferences compares the analytic gradient g of every
// tensor of params (inside arena) with central differences of the loss of
// p, at up to n random entries each, within the bound above. needSignal
// also fails a tensor whose numeric gradient is exactly zero.
func checkFiniteDifferences(t *testing.T, m *Model, p *packed, g []float64, params []ParamInfo, arena kernels.Tensor, n int, rng *rand.Rand, needSignal bool) {
	t.Helper()
	const h = 1e-5
	be := m.be
	for _, pi := range params {
		var dd, nn float64
		var detail string
		for range min(n, pi.Len) {
			i := pi.Offset + rng.IntN(pi.Len)
			cell := arena.View(i, 1)
			x := []float64{0}
			be.Store64(x, cell)
			x0 := x[0]
			be.Load64(cell, []float64{x0 + h})
			lp := m.lossGrad(p, false, 0)
			be.Load64(cell, []float64{x0 - h})
			lm := m.lossGrad(p, false, 0)
			be.Load64(cell, []float64{x0})
			num := (lp - lm) / (2 * h)
			dd += (g[i] - num) * (g[i] - num)
			nn += num * num
			detail += fmt.Sprintf(" [%d] %.6g/%.6g", i-pi.Offset, g[i], num)
		}
		if math.Sqrt(dd) > 1e-6*math.Sqrt(nn)+1e-9 || needSignal && nn == 0 {
			t.Errorf("%s: analytic vs numeric gradient: ‖a−n‖=%.3g, ‖n‖=%.3g:%s", pi.Name, math.Sqrt(dd), math.Sqrt(nn), detail)
		}
	}
}

// TestGradientFloat32VsFloat64 runs the backward pass on both CPU backends
// from identical parameters. Float32 accumulates rounding of ~6e-8 over
// sums of up to a few hundred terms, so each tensor's gradient must agree
// to 1e-4 relative; the floor 1e-3·‖g‖ of the whole gradient only covers
// tensors whose gradient is analytically zero (see above).
func TestGradientFloat32VsFloat64(t *testing.T) {
	for name, cfg := range gradVariants(t) {
		t.Run(name, func(t *testing.T) {
			m64, err := New(cfg, kernels.NewCPU64(), 1)
			if err != nil {
				t.Fatal(err)
			}
			randomize(m64, 2)
			m32, _ := New(cfg, kernels.NewCPU(), 1)
			if err := m32.SetParamValues(m64.ParamValues()); err != nil {
				t.Fatal(err)
			}
			seqs := testBatch(cfg.VocabSize, 3)
			g64, g32 := gradients(t, m64, seqs), gradients(t, m32, seqs)
			var all float64
			for _, v := range g64 {
				all += v * v
			}
			all = math.Sqrt(all)
			for _, pi := range m64.params {
				var dd, nn float64
				for i := pi.Offset; i < pi.Offset+pi.Len; i++ {
					dd += (g32[i] - g64[i]) * (g32[i] - g64[i])
					nn += g64[i] * g64[i]
				}
				if e := math.Sqrt(dd) / max(math.Sqrt(nn), 1e-3*all); e > 1e-4 {
					t.Errorf("%s: float32 vs float64 gradient relative error %.3g > 1e-4 (‖g‖=%.3g)", pi.Name, e, math.Sqrt(nn))
				}
			}
		})
	}
}
