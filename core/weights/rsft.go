package weights

import (
	"whale/core/model"
)

// RSFT is online rejection-sampling fine-tuning: keep the rollouts whose
// reward reaches Threshold, then take one optimizer step of supervised
// fine-tuning over every kept policy call — loss on generated tokens only,
// normalised by their count (the reference's setting).
type RSFT struct {
	Trainer   *model.Trainer
	Threshold float64
	// MicroTokens bounds the padded tokens of one micro-batch (gradients
	// accumulate across micro-batches); 0 means 8192.
	MicroTokens int
}

// NewRSFT returns the operator with the reference threshold.
func NewRSFT(tr *model.Trainer) *RSFT { return &RSFT{Trainer: tr, Threshold: DefaultThreshold} }

func (r *RSFT) Name() string { return "rsft" }

func (r *RSFT) Step(samples []Sample) (Stats, error) {
	if err := checkThreshold(r.Threshold); err != nil {
		return Stats{}, err
	}
	st := countKept(samples, r.Threshold)
	var seqs []model.Sequence
	for _, s := range samples {
		if s.Reward >= r.Threshold {
			if q := sequences(s, 1); len(q) > 0 {
				seqs = append(seqs, q...)
				st.Trained++
			}
		}
	}
	if len(seqs) == 0 {
		return st, nil
	}
	mt := r.MicroTokens
	if mt <= 0 {
		mt = 8192
	}
	ss, err := r.Trainer.Step(microBatches(seqs, mt))
	if err != nil {
		return st, err
	}
	st.Loss, st.GradNorm, st.Tokens, st.LR, st.Updated = ss.Loss, ss.GradNorm, ss.Tokens, ss.LR, true
	return st, nil
}
