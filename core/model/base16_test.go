package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"whale/kernels"
)

// frozenPair returns a LoRA model whose base FreezeBF16 made bfloat16 and
// the float LoRA model of the same rounded weights and the same adapters.
func frozenPair(t *testing.T, m *Model) (frozen, float *Model) {
	t.Helper()
	if err := m.EnableLoRA(allTargets(), 3); err != nil {
		t.Fatal(err)
	}
	randomizeAdapters(t, m, 12)
	ad := m.TrainableValues()
	orig := m.ParamValues()
	if err := m.FreezeBF16(); err != nil {
		t.Fatal(err)
	}
	rounded := m.ParamValues()
	f, err := New(m.Config, kernels.NewCPU(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetParamValues(rounded); err != nil {
		t.Fatal(err)
	}
	if err := f.EnableLoRA(allTargets(), 3); err != nil {
		t.Fatal(err)
	}
	if err := f.SetTrainableValues(ad); err != nil {
		t.Fatal(err)
	}
	// The matrices were rounded to bfloat16, the vectors kept.
	h := make([]kernels.BF16, len(orig))
	kernels.ToBF16(h, orig)
	for _, p := range m.params {
		for i := p.Offset; i < p.Offset+p.Len; i++ {
			want := orig[i]
			if !isVector(p) {
				want = math.Float32frombits(uint32(h[i]) << 16)
			}
			if rounded[i] != want {
				t.Fatalf("%s[%d] = %v after FreezeBF16, want %v", p.Name, i-p.Offset, rounded[i], want)
			}
		}
	}
	return m, f
}

// A bfloat16 base trains exactly as the float model of the rounded
// weights: the products widen the weights into the same packed panels, so
// losses, adapters and logits keep every bit, over several steps.
func TestBF16BaseTrainsAsTheRoundedFloatModel(t *testing.T) {
	for _, name := range []string{"tiny", "medium"} {
		t.Run(name, func(t *testing.T) {
			frozen, float := frozenPair(t, sampleModels(t)[name])
			if !frozen.arena.IsZero() || frozen.frozen.vec.Len() >= frozen.frozen.base.Len()/10 || !frozen.BaseBF16() || float.BaseBF16() {
				t.Fatalf("after FreezeBF16: float arena %d values, vectors %d of %d", frozen.arena.Len(), frozen.frozen.vec.Len(), frozen.frozen.base.Len())
			}
			batch := testBatch(frozen.d.V, 13)
			cfg := DefaultTrainConfig()
			cfg.Schedule = ConstantLR(3e-3)
			ta, err := NewTrainer(frozen, cfg)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := NewTrainer(float, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for step := range 4 {
				sa, err := ta.Step([][]Sequence{batch})
				if err != nil {
					t.Fatal(err)
				}
				sb, err := tb.Step([][]Sequence{batch})
				if err != nil {
					t.Fatal(err)
				}
				if math.Float64bits(sa.Loss) != math.Float64bits(sb.Loss) {
					t.Fatalf("step %d: loss %v over the bfloat16 base, %v over the rounded float weights", step, sa.Loss, sb.Loss)
				}
			}
			if i := bitsEqual(frozen.TrainableValues(), float.TrainableValues()); i >= 0 {
				t.Fatalf("adapter value %d differs after 4 steps", i)
			}
			ids := randPrompt(rand.New(rand.NewPCG(6, 6)), 13, frozen.d.V)
			la, _ := frozen.Logits(ids)
			lb, _ := float.Logits(ids)
			if i := bitsEqual(la, lb); i >= 0 {
				t.Fatalf("logit %d: %v over the bfloat16 base, %v over the rounded float weights", i, la[i], lb[i])
			}
			// Merging for export widens the base: the same merged model.
			ma, err := frozen.MergeLoRA()
			if err != nil {
				t.Fatal(err)
			}
			mb, _ := float.MergeLoRA()
			if !slices.Equal(ma.ParamValues(), mb.ParamValues()) {
				t.Fatal("the merged models differ")
			}
			// A reference copy shares the bfloat16 base.
			ref, err := frozen.WithAdapters()
			if err != nil {
				t.Fatal(err)
			}
			lr, _ := ref.Logits(ids)
			if ref.frozen != frozen.frozen || !slices.Equal(lr, la) {
				t.Fatal("WithAdapters did not share the bfloat16 base")
			}
		})
	}
}

// Sampling reads the bfloat16 base where it is: greedy decoding follows
// the model's own full forward pass, and a request samples the same bits
// alone, in a batch and under continuous batching.
func TestBF16BaseSamples(t *testing.T) {
	frozen, _ := frozenPair(t, sampleModel(t))
	s := NewSampler(frozen, SamplerOptions{})
	prompt := randPrompt(rand.New(rand.NewPCG(7, 7)), 9, frozen.d.V)
	c := generate(t, s, Request{Key: "a", Prompt: prompt, MaxNewTokens: 12})[0]
	checkGreedy(t, frozen, prompt, c)
	if s.pk != nil || s.bw != &frozen.frozen.wb {
		t.Fatal("the sampler copied the bfloat16 base")
	}
	testIndependentOfBatch(t, frozen)
}

func TestFreezeBF16Errors(t *testing.T) {
	m := sampleModel(t)
	if err := m.FreezeBF16(); err == nil || !strings.Contains(err.Error(), "needs LoRA") {
		t.Fatalf("without LoRA: %v", err)
	}
	if err := m.EnableLoRA(allTargets(), 1); err != nil {
		t.Fatal(err)
	}
	tr, _ := NewTrainer(m, DefaultTrainConfig())
	if _, err := tr.Step([][]Sequence{testBatch(m.d.V, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := m.FreezeBF16(); err == nil || !strings.Contains(err.Error(), "before the model trains") {
		t.Fatalf("after a step: %v", err)
	}
	n := tinyModelOn(t, noPack{kernels.NewCPU()})
	if err := n.EnableLoRA(allTargets(), 1); err != nil {
		t.Fatal(err)
	}
	if err := n.FreezeBF16(); err == nil || !strings.Contains(err.Error(), "cannot train over bfloat16") {
		t.Fatalf("on a backend without BF16Base: %v", err)
	}
	f, _ := frozenPair(t, sampleModel(t))
	if err := f.FreezeBF16(); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("twice: %v", err)
	}
	if err := f.SetParamValues(f.ParamValues()); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Fatalf("writing the frozen base: %v", err)
	}
	if v, err := f.ReadParam("model.norm.weight"); err != nil || len(v) != f.d.C {
		t.Fatalf("reading a vector of the frozen model: %v, %d values", err, len(v))
	}
}
