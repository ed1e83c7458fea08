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
// With KLBeta > 0 the step also penalises each kept token's divergence
// from a frozen reference (the phase's starting weights), token by token
// with the k3 estimate: the objective minimised is
//
//	L = (1/T) Σ_t [−log π(y_t) + β (e^δ_t − δ_t − 1)],
//	δ_t = log π_ref(y_t) − log π(y_t),
//
// over the T completion tokens of the kept samples. A token the phase has
// already made much likelier than the reference made it (δ_t < 0) then
// pulls less, or is pushed back, while tokens it has not moved keep the
// full fine-tuning weight: the phase stops sharpening the choices it has
// made (an answer's deciding tokens among many near-certain ones) before
// it stops learning new ones. Measured per token, not per sequence: a
// sequence's mean log-ratio dilutes its few deciding tokens among the
// others (docs/EXPLORATION.md).
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
	for _, s := range kept {
		seqs = append(seqs, sequences(s, 1)...)
	}
	// One forward pass of each model per micro-batch gives every kept
	// token's log-ratio; the masks then carry the per-token weights.
	micro := microBatches(seqs, mt)
	nll, kl := 0.0, 0.0
	for _, mb := range micro {
		cur, err := r.Model.TokenLogProbs(mb)
		if err != nil {
			return st, err
		}
		ref, err := r.Ref.TokenLogProbs(mb)
		if err != nil {
			return st, err
		}
		for i := range mb {
			for t, m := range mb[i].Mask {
				if m == 0 {
					continue
				}
				delta := ref[i][t] - cur[i][t]
				nll -= cur[i][t]
				kl += math.Exp(delta) - delta - 1
				mb[i].Mask[t] = float32(rsftKLWeight(delta, r.KLBeta))
			}
		}
	}
	ss, err := r.Trainer.StepWeighted(micro, float64(total))
	if err != nil {
		return st, err
	}
	st.Loss = (nll + r.KLBeta*kl) / float64(total)
	st.GradNorm, st.Tokens, st.LR, st.Updated = ss.GradNorm, ss.Tokens, ss.LR, true
	return st, nil
}

// rsftKLWeight is T·∂L/∂(−log π_t) for a kept token with log-ratio δ: 1
// from the fine-tuning term, −β(1 − e^δ) from its k3 penalty (∂k3/∂log π_t
// = 1 − e^δ). It may go negative: a token pushed far past the reference
// is then pushed back.
func rsftKLWeight(delta, beta float64) float64 {
	return 1 - beta*(1-math.Exp(delta))
}
