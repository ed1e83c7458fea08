package weights

import (
	"fmt"
	"math"

	"whale/core/model"
)

// DPO trains on pairs of a kept and a rejected rollout of the same prompt,
// against a frozen reference (the weights at the start of the phase):
//
//	loss = −log σ(β·[(log π(w) − log π_ref(w)) − (log π(l) − log π_ref(l))])
//
// where log π of a rollout sums its completion tokens over all its calls.
// Within a group the i-th kept sample pairs with the i-th rejected one.
type DPO struct {
	Model     *model.Model // the policy being trained (the Trainer's model)
	Trainer   *model.Trainer
	Ref       *model.Model
	Beta      float64
	Threshold float64
	// MicroTokens as in RSFT.
	MicroTokens int
}

func (d *DPO) Name() string { return "dpo" }

// dpoTerms returns the loss of one pair and c = β·σ(−z), the magnitude of
// ∂loss/∂log π on each side (−c for the winner, +c for the loser).
func dpoTerms(piW, piL, refW, refL, beta float64) (loss, c float64) {
	z := beta * ((piW - refW) - (piL - refL))
	// softplus(−z) computed without overflow for large |z|
	if z > 0 {
		loss = math.Log1p(math.Exp(-z))
	} else {
		loss = -z + math.Log1p(math.Exp(z))
	}
	return loss, beta / (1 + math.Exp(z))
}

// logProb sums a sample's completion log-probabilities under m.
func logProb(m *model.Model, s Sample) (float64, error) {
	lp, err := m.SequenceLogProbs(sequences(s, 1))
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, v := range lp {
		sum += v
	}
	return sum, nil
}

func (d *DPO) Step(samples []Sample) (Stats, error) {
	if err := checkThreshold(d.Threshold); err != nil {
		return Stats{}, err
	}
	if !(d.Beta > 0) {
		return Stats{}, fmt.Errorf("weights: DPO beta %v must be positive", d.Beta)
	}
	st := countKept(samples, d.Threshold)
	var seqs []model.Sequence
	lossSum := 0.0
	for _, g := range groups(samples) {
		var win, lose []int
		for _, i := range g {
			if completionTokens(samples[i]) == 0 {
				continue
			}
			if samples[i].Reward >= d.Threshold {
				win = append(win, i)
			} else {
				lose = append(lose, i)
			}
		}
		for p := 0; p < min(len(win), len(lose)); p++ {
			w, l := samples[win[p]], samples[lose[p]]
			var lp [4]float64
			for j, x := range []struct {
				m *model.Model
				s Sample
			}{{d.Model, w}, {d.Model, l}, {d.Ref, w}, {d.Ref, l}} {
				v, err := logProb(x.m, x.s)
				if err != nil {
					return st, err
				}
				lp[j] = v
			}
			loss, c := dpoTerms(lp[0], lp[1], lp[2], lp[3], d.Beta)
			lossSum += loss
			seqs = append(seqs, sequences(w, float32(c))...)
			seqs = append(seqs, sequences(l, float32(-c))...)
			st.Pairs++
		}
	}
	if st.Pairs == 0 {
		return st, nil
	}
	st.Trained = 2 * st.Pairs
	mt := d.MicroTokens
	if mt <= 0 {
		mt = 8192
	}
	// The objective Σ mask·(−log p)/Pairs has gradient −c/Pairs on the
	// winner's tokens and +c/Pairs on the loser's: exactly ∂(mean loss).
	ss, err := d.Trainer.StepWeighted(microBatches(seqs, mt), float64(st.Pairs))
	if err != nil {
		return st, err
	}
	st.Loss, st.GradNorm, st.Tokens, st.LR, st.Updated = lossSum/float64(st.Pairs), ss.GradNorm, ss.Tokens, ss.LR, true
	return st, nil
}
