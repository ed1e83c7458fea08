package model

import (
	"context"
	"math"
	"testing"
)

// TestLastLayerKeepsOnlyLastRows: a prefill whose last layer computes each
// prompt's last row alone past its keys and values samples the very bits
// of one that computes every row, for every test model (packed, unpacked,
// under adapters) and sampler option, with whatever kernels this build
// runs; a second round reads the prompts from the prefix cache, so the
// kept layer's keys and values are checked as well.
func TestLastLayerKeepsOnlyLastRows(t *testing.T) {
	defer func(saved bool) { keepLastRows = saved }(keepLastRows)
	ms := sampleModels(t)
	for _, name := range []string{"tiny", "unpacked"} {
		m := sampleModels(t)[name]
		if err := m.EnableLoRA(allTargets(), 4); err != nil {
			t.Fatal(err)
		}
		randomizeAdapters(t, m, 12)
		ms[name+"+lora"] = m
	}
	opts := map[string]SamplerOptions{"default": {}, "bf16": {BF16: true}, "exact": {Exact: true}, "maxbatch5": {MaxBatch: 5}, "kvbf16": {KVBF16: true}}
	for name, m := range ms {
		for on, o := range opts {
			var runs [2][]Completion
			for i, keep := range []bool{false, true} {
				keepLastRows = keep
				s := NewSampler(m, o)
				for range 2 {
					out, err := s.Generate(context.Background(), mixedRequests(m.d.V))
					if err != nil {
						t.Fatal(err)
					}
					runs[i] = append(runs[i], out...)
				}
			}
			for j, want := range runs[0] {
				got := runs[1][j]
				if !sameCompletionBits(got, want) {
					t.Fatalf("%s/%s: completion %d with the last rows kept: %v %v %v, every row: %v %v %v",
						name, on, j, got.Tokens, got.LogProbs, got.Entropy, want.Tokens, want.LogProbs, want.Entropy)
				}
			}
		}
	}
}

func sameCompletionBits(a, b Completion) bool {
	if len(a.Tokens) != len(b.Tokens) || len(a.LogProbs) != len(b.LogProbs) || math.Float32bits(a.Entropy) != math.Float32bits(b.Entropy) {
		return false
	}
	for i := range a.Tokens {
		if a.Tokens[i] != b.Tokens[i] || math.Float32bits(a.LogProbs[i]) != math.Float32bits(b.LogProbs[i]) {
			return false
		}
	}
	return true
}
