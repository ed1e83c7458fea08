package model

import (
	"math"
	"slices"
	"testing"

	"whale/kernels"
)

// gradientsWithin is gradients with the activations bounded by budget
// bytes, and the number of layers that kept theirs.
func gradientsWithin(t *testing.T, m *Model, seqs []Sequence, budget int64) ([]float32, int) {
	t.Helper()
	total, err := m.maskSum(seqs)
	if err != nil {
		t.Fatal(err)
	}
	m.ensureGrads()
	m.be.Fill(m.grad, 0)
	m.lossGrad(m.pack(seqs, 1/total), true, budget)
	g := make([]float32, m.grad.Len())
	m.be.Store(g, m.grad)
	return g, m.act.keep
}

// TestRecomputedLayersGiveTheSameGradients: a backward pass that runs
// layers' forward again instead of keeping their activations gives the
// same gradients bit for bit, for every number of recomputed layers, on every
// architecture variant and under LoRA on all seven projections (whose
// down-projection term the recomputation rebuilds without the product
// itself); and so does keeping every layer's h (the unbounded pass) against
// recomputing it (keep 3 in the budget of the shared h).
func TestRecomputedLayersGiveTheSameGradients(t *testing.T) {
	for name, cfg := range gradVariants(t) {
		cfg.NumHiddenLayers = 4
		for _, lora := range []bool{false, true} {
			m := randomModel(t, cfg, lora)
			if lora {
				name += "+lora"
			}
			seqs := testBatch(cfg.VocabSize, 8)
			p := m.pack(seqs, 1)
			want, keep := gradientsWithin(t, m, seqs, -1)
			if keep != 3 {
				t.Fatalf("%s: unbounded activations keep %d, want 3 (nothing recomputed)", name, keep)
			}
			if !slices.ContainsFunc(want, func(v float32) bool { return v != 0 }) {
				t.Fatalf("%s: all gradients zero", name)
			}
			if !m.act.ownH {
				t.Fatalf("%s: unbounded activations share h", name)
			}
			for k := 0; k <= 3; k++ {
				budget := 4 * int64(m.actsLen(p.B, p.T, k, true))
				if k == 0 {
					budget = 1 // below any layout: keeps none
				}
				got, keep := gradientsWithin(t, m, seqs, budget)
				if keep != k || m.act.ownH {
					t.Fatalf("%s: budget %d B keeps %d layers (own h %v), want %d sharing h", name, budget, keep, m.act.ownH, k)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: recomputing %d of 4 layers, gradient %d is %v, with none %v", name, 3-k, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestActivationBudgetBoundsTheArena: the budget picks the most layers
// whose activations fit, and the arena then fits it; one more layer would
// not have.
func TestActivationBudgetBoundsTheArena(t *testing.T) {
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NumHiddenLayers = 6
	m, err := New(cfg, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	B, T := 3, 40
	all := 4 * int64(m.actsLen(B, T, 5, true))
	for k := 0; k < 5; k++ {
		if 4*int64(m.actsLen(B, T, k, true)) >= 4*int64(m.actsLen(B, T, k+1, true)) {
			t.Fatalf("keeping %d layers takes no less than keeping %d", k, k+1)
		}
	}
	budget := (4*int64(m.actsLen(B, T, 3, true)) + 4*int64(m.actsLen(B, T, 4, true))) / 2
	if k := m.keepFor(B, T, budget); k != 3 {
		t.Fatalf("a budget between 3 and 4 kept layers' sizes keeps %d", k)
	}
	if k := m.keepFor(B, T, all); k != 5 {
		t.Fatalf("a budget of the whole layout keeps %d, want 5 (nothing recomputed)", k)
	}
	if k := m.keepFor(B, T, all-1); k != 4 {
		t.Fatalf("a budget one byte short of the whole layout keeps %d, want 4", k)
	}
	if k := m.keepFor(B, T, 1); k != 0 {
		t.Fatalf("a budget below any layout keeps %d, want 0", k)
	}
	// Every layer's own h only when all layers are kept and it fits too.
	withH := 4 * int64(m.actsLenH(B, T, 5, true, true))
	if withH <= all {
		t.Fatalf("keeping every layer's h takes %d bytes, no more than sharing it (%d)", withH, all)
	}
	if m.ownHFor(B, T, 5, all) || !m.ownHFor(B, T, 5, withH) || !m.ownHFor(B, T, 5, -1) || m.ownHFor(B, T, 4, -1) {
		t.Fatal("ownHFor keeps the layers' h outside a budget that fits them with every layer kept")
	}
	a := m.ensureActs(B, T, m.keepFor(B, T, budget), true, false)
	if got := 4 * int64(m.actArena.Len()); got > budget || a.keep != 3 {
		t.Fatalf("arena of %d bytes (keep %d) for a budget of %d", got, a.keep, budget)
	}
	if m.ActivationBytes() != 4*int64(m.actArena.Len()) || m.ActivationBytes() == 0 {
		t.Fatalf("ActivationBytes %d for an arena of %d floats", m.ActivationBytes(), m.actArena.Len())
	}
	m.ReleaseActivations()
	if m.act != nil || !m.actArena.IsZero() || m.ActivationBytes() != 0 {
		t.Fatal("ReleaseActivations kept the arena")
	}
}

// TestTrainingWithinAnActivationBudgetIsExact: optimizer steps whose
// micro-batches exceed the budget end on the same weights, bit for bit,
// as unbounded ones, with the arena released between steps.
func TestTrainingWithinAnActivationBudgetIsExact(t *testing.T) {
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NumHiddenLayers = 3
	run := func(budget int64, release bool) []float32 {
		m, err := New(cfg, kernels.NewCPU(), 2)
		if err != nil {
			t.Fatal(err)
		}
		tc := DefaultTrainConfig()
		tc.Schedule, tc.ActivationBytes = ConstantLR(1e-2), budget
		tr, err := NewTrainer(m, tc)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			batch := testBatch(cfg.VocabSize, uint64(10+i))
			if _, err := tr.Step([][]Sequence{batch[:2], batch[2:]}); err != nil {
				t.Fatal(err)
			}
			if release {
				m.ReleaseActivations()
			}
		}
		return m.ParamValues()
	}
	want := run(-1, false)
	for _, got := range [][]float32{run(1, true), run(1, false), run(0, true)} {
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("parameter %d: %v within the budget, %v without", i, got[i], want[i])
			}
		}
	}
}
