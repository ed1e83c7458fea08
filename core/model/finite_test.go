package model

import (
	"errors"
	"math"
	"strings"
	"testing"

	"whale/kernels"
)

func TestChecksFindNonFiniteWeightsAndOverflowingLogits(t *testing.T) {
	cfg := Config{ModelType: "qwen3", VocabSize: 64, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 10000,
		MaxPositionEmbeddings: 64, TieWordEmbeddings: true, HiddenAct: "silu"}
	m, err := New(cfg, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func() error{"CheckWeights": m.CheckWeights, "CheckTrainable": m.CheckTrainable, "CheckLogits": m.CheckLogits} {
		if err := check(); err != nil {
			t.Fatalf("%s of a fresh model: %v", name, err)
		}
	}
	p := m.Params()[3]
	v, _ := m.ReadParam(p.Name)
	v[5] = float32(math.NaN())
	if err := m.WriteParam(p.Name, v); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func() error{"CheckWeights": m.CheckWeights, "CheckTrainable": m.CheckTrainable} {
		var nf *NonFiniteError
		if err := check(); !errors.As(err, &nf) || !errors.Is(err, ErrNonFinite) || nf.Tensor != p.Name || nf.Index != 5 {
			t.Fatalf("%s with a NaN in %s[5]: %v", name, p.Name, err)
		}
	}
	// Finite weights whose activations overflow: every value 1e18.
	all := m.ParamValues()
	for i := range all {
		all[i] = 1e18
	}
	if err := m.SetParamValues(all); err != nil {
		t.Fatal(err)
	}
	if err := m.CheckTrainable(); err != nil {
		t.Fatalf("CheckTrainable of finite weights: %v", err)
	}
	var nf *NonFiniteError
	if err := m.CheckLogits(); !errors.As(err, &nf) || nf.What != "logits" || !strings.Contains(err.Error(), "probe_logits") {
		t.Fatalf("CheckLogits of weights of 1e18: %v, want non-finite logits", err)
	}
}
