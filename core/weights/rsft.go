package weights

import (
	"fmt"
	"math"

	"whale/core/model"
)

// RSFT is online rejection-sampling fine-tuning: keep the rollouts whose
// reward reaches Threshold, then take one optimizer step of supervised
// fine-tuning over every kept policy call — loss on generated tokens only,
// normalised by their count (the reference's setting).
//
// With KLBeta > 0 the step also penalises each kept sample's divergence
// from a frozen reference (the phase's starting weights), the k3 estimate
// GRPO uses: the objective minimised is
//
//	L = −(1/T) Σ_t log π_t + (β/K) Σ_i (e^δ_i − δ_i − 1),
//	δ_i = (log π_ref(y_i) − log π(y_i)) / n_i,
//
// over the K kept samples of n_i completion tokens each, T = Σ n_i. A kept
// sample the phase has already made much likelier than the reference made
// it (δ_i < 0) then pulls less, so the phase stops sharpening onto the
// answers it has learnt before it stops learning new ones.
type RSFT struct {
	Trainer   *model.Trainer
	Threshold float64
	// MicroTokens bounds the padded tokens of one micro-batch (gradients
	// accumulate across micro-batches); 0 means 8192.
	MicroTokens int
	// KLBeta weighs the KL penalty towards Ref; 0 turns it off. Model is
	// the model Trainer trains (its log-probabilities enter δ).
	KLBeta float64
	Model  *model.Model
	Ref    *model.Model
}

// NewRSFT returns the operator with the reference threshold.
func NewRSFT(tr *model.Trainer) *RSFT { return &RSFT{Trainer: tr, Threshold: DefaultThreshold} }

func (r *RSFT) Name() string { return "rsft" }

func (r *RSFT) Step(samples []Sample) (Stats, error) {
	if err := checkThreshold(r.Threshold); err != nil {
		return Stats{}, err
	}
	if r.KLBeta < 0 || math.IsNaN(r.KLBeta) || math.IsInf(r.KLBeta, 0) || (r.KLBeta > 0 && (r.Ref == nil || r.Model == nil)) {
		return Stats{}, fmt.Errorf("weights: RSFT's KL β must be finite and ≥ 0, and β > 0 needs the trained and the reference model (β %v)", r.KLBeta)
	}
	st := countKept(samples, r.Threshold)
	var kept []Sample
	for _, s := range samples {
		if s.Reward >= r.Threshold && completionTokens(s) > 0 {
			kept = append(kept, s)
		}
	}
	st.Trained = len(kept)
	if len(kept) == 0 {
		return st, nil
	}
	mt := r.MicroTokens
	if mt <= 0 {
		mt = 8192
	}
	var seqs []model.Sequence
	if r.KLBeta == 0 {
		for _, s := range kept {
			seqs = append(seqs, sequences(s, 1)...)
		}
		ss, err := r.Trainer.Step(microBatches(seqs, mt))
		if err != nil {
			return st, err
		}
		st.Loss, st.GradNorm, st.Tokens, st.LR, st.Updated = ss.Loss, ss.GradNorm, ss.Tokens, ss.LR, true
		return st, nil
	}
	total := 0
	for _, s := range kept {
		total += completionTokens(s)
	}
	nll, kl := 0.0, 0.0
	for _, s := range kept {
		cur, err := logProb(r.Model, s)
		if err != nil {
			return st, err
		}
		ref, err := logProb(r.Ref, s)
		if err != nil {
			return st, err
		}
		n := completionTokens(s)
		delta := (ref - cur) / float64(n)
		w := rsftKLWeight(delta, r.KLBeta, n, total, len(kept))
		nll -= cur
		kl += math.Exp(delta) - delta - 1
		seqs = append(seqs, sequences(s, float32(w*float64(total)))...)
	}
	ss, err := r.Trainer.StepWeighted(microBatches(seqs, mt), float64(total))
	if err != nil {
		return st, err
	}
	st.Loss = nll/float64(total) + r.KLBeta*kl/float64(len(kept))
	st.GradNorm, st.Tokens, st.LR, st.Updated = ss.GradNorm, ss.Tokens, ss.LR, true
	return st, nil
}

// rsftKLWeight is ∂L/∂(−log π_t) for each completion token of a kept
// sample with log-ratio δ and n tokens, of K kept samples holding T tokens
// in all: 1/T from the fine-tuning term, −β(1 − e^δ)/(K·n) from the k3
// penalty (∂k3/∂log π_t = (1 − e^δ)/n). It may go negative: a sample
// pushed far past the reference is then pushed back.
func rsftKLWeight(delta, beta float64, n, total, k int) float64 {
	return 1/float64(total) - beta*(1-math.Exp(delta))/(float64(k)*float64(n))
}
