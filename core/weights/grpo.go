package weights

import (
	"fmt"
	"math"

	"whale/core/model"
)

// GRPO is group-relative policy optimisation: each rollout's advantage is
// its reward standardised within its group, A = (r − mean)/(std + 1e-6),
// and the update maximises the clipped surrogate
//
//	J = mean_i min(ρ_i·A_i, clip(ρ_i, 1−ε, 1+ε)·A_i) − β·KL_i
//
// with a sequence-level ratio ρ_i = exp(mean over its completion tokens of
// log π − log π_old) (log π_old: the log-probabilities recorded at sampling
// time) and the k3 estimate of KL to a frozen reference, when Ref is set.
// Epochs > 1 re-uses the batch for several updates; the ratio and its clip
// only bite from the second epoch on, since the first update starts at
// ρ = 1 up to sampling numerics.
type GRPO struct {
	Model   *model.Model
	Trainer *model.Trainer
	Ref     *model.Model // nil: no KL term
	Clip    float64      // ε, reference 0.2
	KLBeta  float64
	Epochs  int
	// Threshold only classifies samples as kept or rejected in Stats.
	Threshold   float64
	MicroTokens int
	// OldFromModel takes each sample's old-policy log-probability from
	// Model's forward pass in the first epoch (before any update) instead
	// of from the sampler's (Call.LogProbs): for a sampler whose arithmetic
	// is not the trained model's (bfloat16 weights), whose log-probabilities
	// would put a ratio other than 1 on the unchanged policy.
	OldFromModel bool
}

func (g *GRPO) Name() string { return "grpo" }

// advantages standardises rewards within a group; a group whose rewards
// are all equal carries no signal and gets zeros.
func advantages(rewards []float64) []float64 {
	n := float64(len(rewards))
	mean := 0.0
	for _, r := range rewards {
		mean += r
	}
	mean /= n
	v := 0.0
	for _, r := range rewards {
		v += (r - mean) * (r - mean)
	}
	std := math.Sqrt(v / n)
	out := make([]float64, len(rewards))
	if std == 0 {
		return out
	}
	for i, r := range rewards {
		out[i] = (r - mean) / (std + 1e-6)
	}
	return out
}

// grpoWeight is the per-token loss weight of one sample: the derivative of
// the per-sample objective with respect to each completion token's log π,
// given the ratio ρ, the advantage a, the KL log-ratio δ = mean(ref − π)
// and the sample's completion length n. A clipped sample gets 0: its
// surrogate is constant in the parameters.
func grpoWeight(rho, a, delta, klBeta, clip float64, n int) float64 {
	w := 0.0
	if !((a > 0 && rho > 1+clip) || (a < 0 && rho < 1-clip)) {
		w = a * rho
	}
	// k3 = e^δ − δ − 1; ∂k3/∂log π_t = (1 − e^δ)/n, entering J with −β.
	w -= klBeta * (1 - math.Exp(delta))
	return w / float64(n)
}

func (g *GRPO) Step(samples []Sample) (Stats, error) {
	if err := checkThreshold(g.Threshold); err != nil {
		return Stats{}, err
	}
	if !(g.Clip > 0) || g.KLBeta < 0 || (g.KLBeta > 0 && g.Ref == nil) {
		return Stats{}, fmt.Errorf("weights: GRPO needs clip > 0 (have %v) and KL β ≥ 0 with a reference model (β %v)", g.Clip, g.KLBeta)
	}
	st := countKept(samples, g.Threshold)
	adv := make([]float64, len(samples))
	for _, grp := range groups(samples) {
		rs := make([]float64, len(grp))
		for j, i := range grp {
			rs[j] = samples[i].Reward
		}
		for j, a := range advantages(rs) {
			adv[grp[j]] = a
		}
	}
	oldLP := make([]float64, len(samples))
	refLP := make([]float64, len(samples))
	for i, s := range samples {
		if !g.OldFromModel {
			for _, c := range s.Calls {
				for _, lp := range c.LogProbs {
					oldLP[i] += float64(lp)
				}
			}
		}
		if g.Ref != nil && completionTokens(s) > 0 {
			v, err := logProb(g.Ref, s)
			if err != nil {
				return st, err
			}
			refLP[i] = v
		}
	}
	epochs := max(1, g.Epochs)
	mt := g.MicroTokens
	if mt <= 0 {
		mt = 8192
	}
	for e := 0; e < epochs; e++ {
		var seqs []model.Sequence
		trained, obj := 0, 0.0
		for i, s := range samples {
			n := completionTokens(s)
			if n == 0 || (adv[i] == 0 && g.KLBeta == 0) {
				continue
			}
			cur, err := logProb(g.Model, s)
			if err != nil {
				return st, err
			}
			if g.OldFromModel && e == 0 {
				// No update yet: the model is the old policy.
				oldLP[i] = cur
			}
			rho := math.Exp((cur - oldLP[i]) / float64(n))
			delta := 0.0
			if g.Ref != nil {
				delta = (refLP[i] - cur) / float64(n)
			}
			w := grpoWeight(rho, adv[i], delta, g.KLBeta, g.Clip, n)
			obj += math.Min(rho*adv[i], math.Max(math.Min(rho, 1+g.Clip), 1-g.Clip)*adv[i]) - g.KLBeta*(math.Exp(delta)-delta-1)
			if w == 0 {
				continue
			}
			seqs = append(seqs, sequences(s, float32(w))...)
			trained++
		}
		if trained == 0 {
			break
		}
		ss, err := g.Trainer.StepWeighted(microBatches(seqs, mt), float64(len(samples)))
		if err != nil {
			return st, err
		}
		st.Trained = max(st.Trained, trained)
		st.Loss, st.GradNorm, st.Tokens, st.LR, st.Updated = -obj/float64(len(samples)), ss.GradNorm, ss.Tokens, ss.LR, true
	}
	return st, nil
}
