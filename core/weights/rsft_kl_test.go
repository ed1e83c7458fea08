package weights

import (
	"math"
	"testing"

	"whale/core/model"
	"whale/kernels"
)

// The per-token weights are the derivative of the objective: a central
// difference of L over one token's log π, the others fixed, must equal
// −rsftKLWeight/T (L falls as log π rises, by the fine-tuning term, and
// the penalty pulls the other way once π passes the reference).
func TestRSFTKLWeightIsTheObjectivesDerivative(t *testing.T) {
	lp := []float64{-1, -0.5, -2, -0.1, -0.2, -3, -0.01}
	ref := []float64{-1.5, -0.5, -0.2, -2, -0.05, -4, -0.3} // log π_ref of the same tokens
	const beta = 0.7
	T := float64(len(lp))
	obj := func(lp []float64) float64 {
		l := 0.0
		for i, v := range lp {
			d := ref[i] - v
			l += (-v + beta*(math.Exp(d)-d-1)) / T
		}
		return l
	}
	const h = 1e-6
	for i := range lp {
		w := rsftKLWeight(ref[i]-lp[i], beta) / T
		lp[i] += h
		up := obj(lp)
		lp[i] -= 2 * h
		down := obj(lp)
		lp[i] += h
		// Central differences of a smooth function at h = 1e-6 are exact
		// to O(h²) plus rounding ~1e-16/h: 1e-8 is ample.
		if fd := (up - down) / (2 * h); math.Abs(fd+w) > 1e-8 {
			t.Fatalf("token %d: ∂L/∂log π = %v by differences, −weight/T = %v", i, fd, -w)
		}
	}
	// With no divergence the weight is plain fine-tuning's.
	if w := rsftKLWeight(0, 5); w != 1 {
		t.Fatalf("weight at δ = 0: %v, want 1", w)
	}
}

// At the phase's first step the model is its reference: the KL step is
// plain RSFT's step up to the rounding of the per-token weights.
func TestRSFTKLAtTheReferenceIsPlainRSFT(t *testing.T) {
	kept := []Sample{sample("a", 1, "", []int32{1, 2, 3}, []int32{7, 8, 9}), sample("b", 1, "", []int32{4}, []int32{5, 6})}
	plain, trP := tiny(t, 5)
	withKL, trK := tiny(t, 5)
	ref := frozenCopy(t, withKL)
	if _, err := NewRSFT(trP).Step(kept); err != nil {
		t.Fatal(err)
	}
	st, err := (&RSFT{Trainer: trK, Threshold: DefaultThreshold, KLBeta: 1, Model: withKL, Ref: ref}).Step(kept)
	if err != nil {
		t.Fatal(err)
	}
	if st.Trained != 2 || !st.Updated || st.Tokens != 5 {
		t.Fatalf("stats %+v", st)
	}
	a, b := plain.ParamValues(), withKL.ParamValues()
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
	}
	// Adam's first step moves each weight by about lr = 1e-2 whatever the
	// gradient's scale; the weights T·(1/T) differ from 1 by an ulp, so the
	// two steps agree far below the step itself.
	if worst > 1e-5 {
		t.Fatalf("KL step at the reference differs from plain RSFT by %v", worst)
	}
}

// The penalty holds a kept sample nearer the reference: after the same
// steps on the same sample, its log-probability has risen less with β > 0
// than without, and still risen.
func TestRSFTKLBrakesSharpening(t *testing.T) {
	kept := []Sample{sample("a", 1, "", []int32{1, 2, 3}, []int32{7, 8, 9})}
	gain := func(beta float64) float64 {
		m, tr := tiny(t, 6)
		r := &RSFT{Trainer: tr, Threshold: DefaultThreshold, KLBeta: beta, Model: m, Ref: frozenCopy(t, m)}
		lp0, _ := logProb(m, kept[0])
		for i := 0; i < 8; i++ {
			if _, err := r.Step(kept); err != nil {
				t.Fatal(err)
			}
		}
		lp1, _ := logProb(m, kept[0])
		return lp1 - lp0
	}
	free, braked := gain(0), gain(2)
	if !(braked > 0.1) || !(braked < free-0.1) {
		t.Fatalf("log p gain over 8 steps: β 0 %+.3f, β 2 %+.3f (want the braked one positive and clearly smaller)", free, braked)
	}
	m, tr := tiny(t, 7)
	if _, err := (&RSFT{Trainer: tr, Threshold: DefaultThreshold, KLBeta: 0.5, Model: m}).Step(kept); err == nil {
		t.Fatal("KL β > 0 without a reference model accepted")
	}
	if _, err := (&RSFT{Trainer: tr, Threshold: DefaultThreshold, KLBeta: -1, Model: m, Ref: m}).Step(kept); err == nil {
		t.Fatal("negative KL β accepted")
	}
}

func frozenCopy(t *testing.T, m *model.Model) *model.Model {
	t.Helper()
	ref, err := model.New(m.Config, kernels.NewCPU(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := ref.SetParamValues(m.ParamValues()); err != nil {
		t.Fatal(err)
	}
	return ref
}
