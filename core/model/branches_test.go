package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"whale/kernels"
)

// sharedBatch is a micro-batch as RSFT hands it over after sorting: three
// samples of one prompt (two of them alike beyond it for a while, so the
// third shortens what the group shares), a
// sequence of another prompt, a sample of a third prompt alone, and a
// pair that shares fewer than minShared tokens. Masks weigh the
// completions, and one prompt position too, so a shared position's summed
// weight is exercised.
func sharedBatch(V int) []Sequence {
	rng := rand.New(rand.NewPCG(21, 22))
	toks := func(n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(rng.IntN(V))
		}
		return s
	}
	seq := func(prompt, completion []int32) Sequence {
		t := append(append([]int32(nil), prompt...), completion...)
		m := make([]float32, len(t))
		for i := len(prompt); i < len(t); i++ {
			m[i] = 1
		}
		m[5] = 0.25
		return Sequence{Tokens: t, Mask: m}
	}
	p1, p2, p3 := toks(40), toks(35), toks(12)
	c := toks(6)
	return []Sequence{
		seq(p1, append(append([]int32(nil), c...), toks(9)...)),
		seq(p1, append(append([]int32(nil), c...), toks(4)...)),
		seq(p1, toks(70)), // a branch longer than an attention block
		seq(p2, toks(8)),
		seq(toks(30), toks(5)),
		seq(p3, toks(7)),
		seq(p3, toks(3)),
	}
}

// TestSharedPromptsTrainTheSameGradients: packing the samples of a prompt
// as one row with branches gives the loss and every gradient of one row
// per sample, up to float32 summation order, on every architecture
// variant, with and without recomputed layers, and under LoRA; and the
// layout it chose is the smaller one.
func TestSharedPromptsTrainTheSameGradients(t *testing.T) {
	for name, cfg := range gradVariants(t) {
		cfg.NumHiddenLayers = 3
		cfg.MaxPositionEmbeddings = 160 // room for a branch longer than an attention block
		for _, lora := range []bool{false, true} {
			m := randomModel(t, cfg, lora)
			if lora {
				name += "+lora"
			}
			seqs := sharedBatch(cfg.VocabSize)
			total, err := m.maskSum(seqs)
			if err != nil {
				t.Fatal(err)
			}
			plain, shared := m.pack(seqs, 1/total), m.packTrain(seqs, 1/total)
			if shared.br == nil || shared.B != 5 || shared.B*shared.T >= plain.B*plain.T {
				t.Fatalf("%s: packTrain gave %d rows of %d (branches %v) against pack's %d of %d", name, shared.B, shared.T, shared.br != nil, plain.B, plain.T)
			}
			grads := func(p *packed, budget int64) (float64, []float32) {
				m.ensureGrads()
				m.be.Fill(m.grad, 0)
				loss := m.lossGrad(p, true, budget)
				g := make([]float32, m.grad.Len())
				m.be.Store(g, m.grad)
				return loss, g
			}
			wantLoss, want := grads(plain, -1)
			if !slices.ContainsFunc(want, func(v float32) bool { return v != 0 }) {
				t.Fatalf("%s: all gradients zero", name)
			}
			scale := 0.0
			for _, v := range want {
				scale = max(scale, math.Abs(float64(v)))
			}
			for _, budget := range []int64{-1, 1} { // every layer kept; none (all recomputed)
				loss, got := grads(shared, budget)
				// The same terms summed in another order: a few float32
				// ulps of the largest gradient (measured below 1e-6 of it).
				if d := math.Abs(loss-wantLoss) / wantLoss; d > 1e-6 {
					t.Fatalf("%s (budget %d): loss %v with branches, %v a row each", name, budget, loss, wantLoss)
				}
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); d > 1e-5*scale {
						t.Fatalf("%s (budget %d): gradient %d is %v with branches, %v a row each (largest %v)", name, budget, i, got[i], want[i], scale)
					}
				}
			}
		}
	}
}

// TestSharedPromptsNeedTheBackend: a backend without branch attention
// trains one row per sequence.
func TestSharedPromptsNeedTheBackend(t *testing.T) {
	m := tinyModel(t, plainBackend{kernels.NewCPU()}, 1)
	seqs := sharedBatch(m.Config.VocabSize)
	if p := m.packTrain(seqs, 1); p.br != nil || p.B != len(seqs) {
		t.Fatalf("%d rows (branches %v) on a backend without branch attention", p.B, p.br != nil)
	}
}

// randomModel is a model of cfg with random weights (and random LoRA
// adapters on all seven projections when lora is set), for tests that
// compare two ways of computing its gradients.
func randomModel(t *testing.T, cfg Config, lora bool) *Model {
	t.Helper()
	m, err := New(cfg, kernels.NewCPU(), 3)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 4)
	if lora {
		if err := m.EnableLoRA(allTargets(), 5); err != nil {
			t.Fatal(err)
		}
		randomizeAdapters(t, m, 6)
	}
	return m
}

// plainBackend hides the CPU backend's optional interfaces.
type plainBackend struct{ kernels.Backend }
