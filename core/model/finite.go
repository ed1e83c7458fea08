package model

import (
	"fmt"
	"math"
)

// NonFiniteError names the first NaN or infinity found in a model's
// parameters or in the logits of a probe: which tensor, at which flat
// index, and the value.
type NonFiniteError struct {
	// What is "weights" or "logits".
	What   string
	Tensor string
	Index  int
	Value  float32
}

func (e *NonFiniteError) Error() string {
	return "model: non-finite " + e.What + ": " + e.Where()
}

// Where names the value: "TENSOR[INDEX] = VALUE".
func (e *NonFiniteError) Where() string {
	return fmt.Sprintf("%s[%d] = %v", e.Tensor, e.Index, e.Value)
}

// Unwrap makes a NonFiniteError an ErrNonFinite.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }

func finite32(v float32) bool {
	return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
}

// CheckTrainable returns a *NonFiniteError naming the first trainable
// parameter (the adapters under LoRA, else every parameter) that holds a
// NaN or an infinity, nil when all are finite. It costs one sum of
// squares over the arena on the backend; only a failing check copies
// tensors out to find the culprit. A float64 sum of float32 squares
// cannot overflow, so it is finite exactly when every value is.
func (m *Model) CheckTrainable() error {
	ps, arena := m.trainable()
	ss := m.be.SumSq(arena)
	if !math.IsNaN(ss) && !math.IsInf(ss, 0) {
		return nil
	}
	vals := m.TrainableValues()
	for _, p := range ps {
		for i, v := range vals[p.Offset : p.Offset+p.Len] {
			if !finite32(v) {
				return &NonFiniteError{What: "weights", Tensor: p.Name, Index: i, Value: v}
			}
		}
	}
	// The sum said otherwise: report the arena as a whole.
	return &NonFiniteError{What: "weights", Tensor: "(parameter arena)", Index: -1, Value: float32(ss)}
}

// CheckWeights is CheckTrainable over every parameter, frozen ones
// included: what a loaded model is checked with before anything runs on
// it. Under LoRA the adapters are checked too.
func (m *Model) CheckWeights() error {
	for _, p := range m.params {
		v := make([]float32, p.Len)
		m.readParam(v, p)
		for i, x := range v {
			if !finite32(x) {
				return &NonFiniteError{What: "weights", Tensor: p.Name, Index: i, Value: x}
			}
		}
	}
	if m.lora != nil {
		return m.CheckTrainable()
	}
	return nil
}

// ProbeTokens is the sequence CheckLogits runs: short, and made of ids
// every vocabulary has.
func probeTokens(V int) []int32 {
	out := make([]int32, 8)
	for i := range out {
		out[i] = int32((i * 37) % V)
	}
	return out
}

// CheckLogits runs one forward pass over a short fixed sequence and
// returns a *NonFiniteError when a logit is NaN or infinite: weights that
// are finite but so large that the activations overflow (after a step at
// a learning rate of 1e8, say) fail here, before they sample a rollout
// or reach a resume point. The activations it used are released.
func (m *Model) CheckLogits() error {
	toks := probeTokens(m.d.V)
	logits, err := m.Logits(toks)
	m.ReleaseActivations()
	if err != nil {
		return err
	}
	V := m.d.V
	for i, v := range logits {
		if !finite32(v) {
			return &NonFiniteError{What: "logits", Tensor: fmt.Sprintf("probe_logits[position %d]", i/V), Index: i % V, Value: v}
		}
	}
	return nil
}
