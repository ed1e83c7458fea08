package model

import (
	"errors"
	"fmt"
	"math"

	"whale/kernels"
)

// ErrNonFinite is returned by Trainer.Step when the loss or a gradient is
// NaN or Inf. The step is refused: parameters and optimizer state are
// untouched, and the caller decides whether to skip the batch or roll back.
var ErrNonFinite = errors.New("model: non-finite loss or gradient")

// Schedule gives the learning rate of a 1-based optimizer step.
type Schedule interface {
	LR(step int) float64
}

// ConstantLR is a fixed learning rate.
type ConstantLR float64

// LR implements Schedule.
func (c ConstantLR) LR(int) float64 { return float64(c) }

// CosineLR warms up linearly from 0 to Peak over Warmup steps, then decays
// along a half cosine to Floor at step Total and stays there.
type CosineLR struct {
	Peak, Floor   float64
	Warmup, Total int
}

// LR implements Schedule.
func (c CosineLR) LR(step int) float64 {
	if step <= c.Warmup {
		return c.Peak * float64(step) / float64(max(c.Warmup, 1))
	}
	p := float64(step-c.Warmup) / float64(max(c.Total-c.Warmup, 1))
	p = min(p, 1)
	return c.Floor + (c.Peak-c.Floor)*0.5*(1+math.Cos(math.Pi*p))
}

// TrainConfig holds the optimizer settings.
type TrainConfig struct {
	Schedule          Schedule
	Beta1, Beta2, Eps float64
	WeightDecay       float64 // decoupled; applied to matrices and embeddings only
	ClipNorm          float64 // global gradient-norm bound; 0 disables clipping
	// ActivationBytes bounds a micro-batch's training activations (4
	// bytes a float): the layers beyond the bound share one set, refilled
	// in the backward pass by running each one's forward again from its
	// stored input — the same gradients bit for bit, at the cost of one
	// more forward pass of those layers. 0 means DefaultActivationBytes;
	// negative keeps every layer's.
	ActivationBytes int64
}

// DefaultTrainConfig returns AdamW(0.9, 0.95, 1e-8), weight decay 0.1,
// clipping at 1 and a constant learning rate of 1e-4.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Schedule: ConstantLR(1e-4), Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, ClipNorm: 1}
}

func (c TrainConfig) validate() error {
	switch {
	case c.Schedule == nil:
		return errors.New("model: train config: Schedule is nil")
	case !(c.Beta1 >= 0 && c.Beta1 < 1):
		return fmt.Errorf("model: train config: Beta1 %v outside [0, 1)", c.Beta1)
	case !(c.Beta2 >= 0 && c.Beta2 < 1):
		return fmt.Errorf("model: train config: Beta2 %v outside [0, 1)", c.Beta2)
	case !(c.Eps > 0):
		return fmt.Errorf("model: train config: Eps %v must be positive", c.Eps)
	case !(c.WeightDecay >= 0):
		return fmt.Errorf("model: train config: WeightDecay %v must be ≥ 0", c.WeightDecay)
	case !(c.ClipNorm >= 0):
		return fmt.Errorf("model: train config: ClipNorm %v must be ≥ 0", c.ClipNorm)
	}
	return nil
}

// Trainer runs optimizer steps on a Model: cross-entropy on masked tokens,
// gradient accumulation over micro-batches, global-norm clipping, AdamW.
type Trainer struct {
	m      *Model
	cfg    TrainConfig
	mo, ve kernels.Tensor // AdamW first and second moments, arena layout
	step   int            // optimizer steps taken
}

// NewTrainer returns a trainer for m with fresh optimizer state. Under
// LoRA (Model.EnableLoRA, which must come first) it trains the adapters
// alone.
func NewTrainer(m *Model, cfg TrainConfig) (*Trainer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m.ensureGrads()
	return &Trainer{m: m, cfg: cfg, mo: m.be.Alloc(m.grad.Len()), ve: m.be.Alloc(m.grad.Len())}, nil
}

// StepStats reports one optimizer step.
type StepStats struct {
	Step     int     // 1-based step number just taken
	Loss     float64 // token-normalised loss over the whole step
	GradNorm float64 // global gradient norm before clipping
	LR       float64
	Tokens   float64 // the normaliser: Σ mask (Step) or norm (StepWeighted)
}

// Step takes one optimizer step on micro, a list of micro-batches that
// together form the batch: each micro-batch runs forward and backward on
// its own (right-padded to its longest sequence), gradients accumulate,
// and the loss is normalised by the mask total of the whole batch, so the
// split into micro-batches does not change the step beyond rounding.
func (t *Trainer) Step(micro [][]Sequence) (StepStats, error) {
	loss, tokens, err := t.accumulate(micro)
	if err != nil {
		return StepStats{}, err
	}
	return t.apply(loss, tokens)
}

// StepWeighted takes one optimizer step on the objective
// Σ Mask[t]·(−log p(Tokens[t])) / norm over all micro-batches, where masks
// may be negative: per-token advantages of a policy-gradient update
// (GRPO), or per-sequence coefficients of DPO computed from a forward
// pass. norm must be positive (e.g. the number of completion tokens).
func (t *Trainer) StepWeighted(micro [][]Sequence, norm float64) (StepStats, error) {
	if !(norm > 0) || math.IsInf(norm, 0) {
		return StepStats{}, fmt.Errorf("model: weighted step: norm %v must be positive and finite", norm)
	}
	for i, mb := range micro {
		if _, err := t.m.checkSeqs(mb, true); err != nil {
			return StepStats{}, fmt.Errorf("micro-batch %d: %w", i, err)
		}
	}
	loss := t.backwardAll(micro, norm)
	return t.apply(loss, norm)
}

// accumulate zeroes the gradients and adds those of every micro-batch.
func (t *Trainer) accumulate(micro [][]Sequence) (loss, total float64, err error) {
	m := t.m
	for i, mb := range micro {
		s, err := m.maskSum(mb)
		if err != nil {
			return 0, 0, fmt.Errorf("micro-batch %d: %w", i, err)
		}
		total += s
	}
	if total == 0 {
		return 0, 0, errors.New("model: train step: no target has a non-zero mask")
	}
	return t.backwardAll(micro, total), total, nil
}

// backwardAll zeroes the gradients and adds those of every micro-batch
// with token weights mask/norm, returning the summed loss.
func (t *Trainer) backwardAll(micro [][]Sequence, norm float64) (loss float64) {
	m := t.m
	m.be.Fill(m.grad, 0)
	for _, mb := range micro {
		if len(mb) > 0 {
			loss += m.lossGrad(m.packTrain(mb, 1/norm), true, t.cfg.ActivationBytes)
		}
	}
	return loss
}

// apply checks the loss and gradients, clips and updates.
func (t *Trainer) apply(loss, tokens float64) (StepStats, error) {
	m := t.m
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return StepStats{}, fmt.Errorf("%w: loss %v", ErrNonFinite, loss)
	}
	// A float64 sum of float32 squares cannot overflow, so it is finite
	// exactly when every gradient is.
	ss := m.be.SumSq(m.grad)
	if math.IsNaN(ss) || math.IsInf(ss, 0) {
		return StepStats{}, fmt.Errorf("%w: gradient norm² %v", ErrNonFinite, ss)
	}
	norm := math.Sqrt(ss)
	scale := 1.0
	if t.cfg.ClipNorm > 0 && norm > t.cfg.ClipNorm {
		scale = t.cfg.ClipNorm / norm
	}
	lr := t.cfg.Schedule.LR(t.step + 1)
	if math.IsNaN(lr) || lr < 0 {
		return StepStats{}, fmt.Errorf("model: train step %d: schedule gave learning rate %v", t.step+1, lr)
	}
	t.step++
	params, arena := m.trainable()
	if m.lora == nil {
		m.baseVersion++
	}
	for _, p := range params {
		h := kernels.AdamW{LR: lr, Beta1: t.cfg.Beta1, Beta2: t.cfg.Beta2, Eps: t.cfg.Eps, GradScale: scale, Step: t.step}
		if p.Decay {
			h.WeightDecay = t.cfg.WeightDecay
		}
		v := func(a kernels.Tensor) kernels.Tensor { return a.View(p.Offset, p.Len) }
		m.be.AdamWUpdate(v(arena), v(m.grad), v(t.mo), v(t.ve), h)
	}
	m.version++
	return StepStats{Step: t.step, Loss: loss, GradNorm: norm, LR: lr, Tokens: tokens}, nil
}

// OptimizerState is the trainer's state for checkpoints: the step count and
// AdamW moments in the layout of what trains (see Model.TrainableParams).
type OptimizerState struct {
	Step int
	M, V []float32
}

// State exports the optimizer state.
func (t *Trainer) State() OptimizerState {
	s := OptimizerState{Step: t.step, M: make([]float32, t.mo.Len()), V: make([]float32, t.ve.Len())}
	t.m.be.Store(s.M, t.mo)
	t.m.be.Store(s.V, t.ve)
	return s
}

// SetState imports optimizer state exported by State.
func (t *Trainer) SetState(s OptimizerState) error {
	n := t.mo.Len()
	if len(s.M) != n || len(s.V) != n {
		return fmt.Errorf("model: optimizer state has %d/%d moments for %d parameters", len(s.M), len(s.V), n)
	}
	if s.Step < 0 {
		return fmt.Errorf("model: optimizer state step %d is negative", s.Step)
	}
	t.m.be.Load(t.mo, s.M)
	t.m.be.Load(t.ve, s.V)
	t.step = s.Step
	return nil
}
