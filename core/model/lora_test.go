package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"whale/core/policy"
	"whale/kernels"
)

func allTargets() LoRAConfig { return LoRAConfig{Rank: 3, Alpha: 6, Targets: LoRATargets} }

// randomizeAdapters gives B (zero at init) and A random values, so every
// adapter path carries signal.
func randomizeAdapters(t *testing.T, m *Model, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	v := m.TrainableValues()
	for i := range v {
		v[i] = float32(0.3 * rng.NormFloat64())
	}
	if err := m.SetTrainableValues(v); err != nil {
		t.Fatal(err)
	}
}

// TestLoRAGradientFiniteDifferences checks every adapter tensor's
// gradient against central differences of the float64 loss, with the
// bound of TestGradientFiniteDifferences (h = 1e-5: truncation ≈ 1e-10
// relative, rounding ≈ 1e-11 absolute). The frozen weights get no
// gradient at all: only the adapters' is allocated.
func TestLoRAGradientFiniteDifferences(t *testing.T) {
	for name, cfg := range gradVariants(t) {
		t.Run(name, func(t *testing.T) {
			be := kernels.NewCPU64()
			m, err := New(cfg, be, 1)
			if err != nil {
				t.Fatal(err)
			}
			randomize(m, 2)
			if err := m.EnableLoRA(allTargets(), 3); err != nil {
				t.Fatal(err)
			}
			randomizeAdapters(t, m, 4)
			seqs := testBatch(cfg.VocabSize, 3)
			g := gradients(t, m, seqs)
			if len(g) != m.lora.arena.Len() || len(g) >= m.arena.Len() {
				t.Fatalf("%d gradients for %d adapter values (%d weights)", len(g), m.lora.arena.Len(), m.arena.Len())
			}
			total, _ := m.maskSum(seqs)
			p := m.pack(seqs, 1/total)
			checkFiniteDifferences(t, m, p, g, m.lora.params, m.lora.arena, 6, rand.New(rand.NewPCG(5, 5)), true)
		})
	}
}

// TestFreshLoRAChangesNothing: B starts at zero, so a fresh adapter's
// term is exactly zero and the logits keep every bit.
func TestFreshLoRAChangesNothing(t *testing.T) {
	m := sampleModel(t)
	ids := randPrompt(rand.New(rand.NewPCG(1, 1)), 17, m.d.V)
	before, _ := m.Logits(ids)
	if err := m.EnableLoRA(allTargets(), 1); err != nil {
		t.Fatal(err)
	}
	after, _ := m.Logits(ids)
	for i := range before {
		if math.Float32bits(before[i]) != math.Float32bits(after[i]) {
			t.Fatalf("logit %d: %v before LoRA, %v with fresh adapters", i, before[i], after[i])
		}
	}
}

// TestLoRATrainsTheAdaptersAlone: steps move the adapters and lower the
// loss while every weight keeps its bits; writing the weights is refused.
func TestLoRATrainsTheAdaptersAlone(t *testing.T) {
	m := sampleModel(t)
	base := m.ParamValues()
	if err := m.EnableLoRA(LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q", "v", "down"}}, 2); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTrainConfig()
	cfg.Schedule = ConstantLR(3e-3)
	tr, err := NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	batch := testBatch(m.d.V, 7)
	first, last := 0.0, 0.0
	for i := range 30 {
		st, err := tr.Step([][]Sequence{batch})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = st.Loss
		}
		last = st.Loss
	}
	if !(last < first*0.8) {
		t.Fatalf("loss %v → %v after 30 adapter steps: not learning", first, last)
	}
	if !slices.Equal(base, m.ParamValues()) {
		t.Fatal("LoRA training changed the frozen weights")
	}
	if err := m.SetParamValues(base); err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Fatalf("writing frozen weights: %v", err)
	}
	if st := tr.State(); len(st.M) != m.lora.arena.Len() {
		t.Fatalf("optimizer moments for %d values, adapters have %d", len(st.M), m.lora.arena.Len())
	}
}

// TestMergeLoRAMatchesTheAdaptedModel: folding the adapters into the
// weights gives the adapted model's logits up to float32 rounding of the
// merged weights and of the two products' different summation orders:
// ~1e-6 relative on logits of order 1, so 1e-4 absolute.
func TestMergeLoRAMatchesTheAdaptedModel(t *testing.T) {
	m := sampleModel(t)
	if err := m.EnableLoRA(allTargets(), 3); err != nil {
		t.Fatal(err)
	}
	randomizeAdapters(t, m, 5)
	ids := randPrompt(rand.New(rand.NewPCG(2, 2)), 19, m.d.V)
	want, _ := m.Logits(ids)
	merged, err := m.MergeLoRA()
	if err != nil {
		t.Fatal(err)
	}
	if merged.LoRA() != nil {
		t.Fatal("the merged model still has adapters")
	}
	got, _ := merged.Logits(ids)
	var worst, moved float64
	plain, _ := New(m.Config, m.be, 0)
	_ = plain.SetParamValues(m.ParamValues())
	base, _ := plain.Logits(ids)
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
		moved = max(moved, math.Abs(float64(base[i]-want[i])))
	}
	if worst > 1e-4 {
		t.Fatalf("merged logits differ from the adapted model's by %.3g", worst)
	}
	if moved < 0.1 {
		t.Fatalf("the adapters move the logits by only %.3g: the test would not see a dropped adapter", moved)
	}
}

// TestSamplerUsesTheAdapters: greedy decoding under LoRA follows the full
// forward pass of the adapted model (checkGreedy), and after a training
// step of the adapters the sampler sees the new ones (its packed copy of
// the frozen weights stays, its prefix cache does not).
func TestSamplerUsesTheAdapters(t *testing.T) {
	m := sampleModel(t)
	if err := m.EnableLoRA(allTargets(), 3); err != nil {
		t.Fatal(err)
	}
	randomizeAdapters(t, m, 6)
	s := NewSampler(m, SamplerOptions{})
	prompt := randPrompt(rand.New(rand.NewPCG(3, 3)), 9, m.d.V)
	c := generate(t, s, Request{Key: "a", Prompt: prompt, MaxNewTokens: 12})[0]
	checkGreedy(t, m, prompt, c)
	packed := s.pk
	seq := Sequence{Tokens: append(slices.Clone(prompt), c.Tokens...)}
	seq.Mask = make([]float32, len(seq.Tokens))
	for i := len(prompt); i < len(seq.Mask); i++ {
		seq.Mask[i] = 1
	}
	cfg := DefaultTrainConfig()
	cfg.Schedule = ConstantLR(0.05)
	tr, _ := NewTrainer(m, cfg)
	for range 3 {
		if _, err := tr.Step([][]Sequence{{seq}}); err != nil {
			t.Fatal(err)
		}
	}
	c2 := generate(t, s, Request{Key: "a", Prompt: prompt, MaxNewTokens: 12})[0]
	checkGreedy(t, m, prompt, c2)
	if slices.Equal(c.LogProbs, c2.LogProbs) {
		t.Fatal("the sampler's log-probabilities did not change after the adapters trained")
	}
	if packed != nil && s.pk != packed {
		t.Fatal("the sampler re-made its packed weights though only the adapters changed")
	}
	if c2.Finish != policy.FinishLength {
		t.Fatalf("finish %s", c2.Finish)
	}
}

// TestLoRASamplingIndependentOfBatch: with adapters, on packed and on
// unpacked weights, a request samples the same tokens and log-probability
// bits alone, in a batch, reversed, under continuous batching and under a
// tight KV budget (testIndependentOfBatch).
func TestLoRASamplingIndependentOfBatch(t *testing.T) {
	for _, name := range []string{"tiny", "unpacked"} {
		t.Run(name, func(t *testing.T) {
			m := sampleModels(t)[name]
			if err := m.EnableLoRA(allTargets(), 4); err != nil {
				t.Fatal(err)
			}
			randomizeAdapters(t, m, 11)
			testIndependentOfBatch(t, m)
		})
	}
}

// TestWithAdaptersSharesTheWeights: the reference copy reads the same
// weights (no second arena) and keeps its own adapters when m trains.
func TestWithAdaptersSharesTheWeights(t *testing.T) {
	m := sampleModel(t)
	if err := m.EnableLoRA(allTargets(), 3); err != nil {
		t.Fatal(err)
	}
	randomizeAdapters(t, m, 8)
	ref, err := m.WithAdapters()
	if err != nil {
		t.Fatal(err)
	}
	ids := randPrompt(rand.New(rand.NewPCG(4, 4)), 11, m.d.V)
	a, _ := m.Logits(ids)
	b, _ := ref.Logits(ids)
	if !slices.Equal(a, b) {
		t.Fatal("the reference's logits differ from the model's it was made from")
	}
	randomizeAdapters(t, m, 9)
	c, _ := ref.Logits(ids)
	if !slices.Equal(b, c) {
		t.Fatal("the reference followed the model's new adapters")
	}
	// Past the freeze, straight into the backend: the reference reads the
	// very same weights, so it sees the change.
	before, _ := ref.Logits([]int32{0})
	w := m.ParamValues()
	w[0] += 1 // token 0's embedding
	m.be.Load(m.arena, w)
	after, _ := ref.Logits([]int32{0})
	if slices.Equal(before, after) {
		t.Fatal("the reference does not read the model's weights: it copied them")
	}
}

func TestLoRAConfigErrors(t *testing.T) {
	m := sampleModel(t)
	for _, tc := range []struct {
		c    LoRAConfig
		want string
	}{
		{LoRAConfig{Rank: 0, Alpha: 1, Targets: []string{"q"}}, "rank 0"},
		{LoRAConfig{Rank: 2, Alpha: 0, Targets: []string{"q"}}, "alpha 0"},
		{LoRAConfig{Rank: 2, Alpha: 1, Targets: []string{"qq"}}, `"qq"`},
		{LoRAConfig{Rank: 2, Alpha: 1, Targets: []string{"q", "q"}}, "twice"},
		{LoRAConfig{Rank: 2, Alpha: 1}, "no targets"},
		{LoRAConfig{Rank: 1000, Alpha: 1, Targets: []string{"k"}}, "exceeds"},
	} {
		if err := m.EnableLoRA(tc.c, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error with %q", tc.c, err, tc.want)
		}
	}
	if _, err := ParseLoRATargets("q,mlp"); err == nil || !strings.Contains(err.Error(), `"mlp"`) {
		t.Errorf("bad target list: %v", err)
	}
	if got, _ := ParseLoRATargets("down, q,v"); !slices.Equal(got, []string{"q", "v", "down"}) {
		t.Errorf("target list order: %v", got)
	}
	if _, err := NewTrainer(m, DefaultTrainConfig()); err != nil {
		t.Fatal(err)
	}
	if err := m.EnableLoRA(allTargets(), 1); err == nil || !strings.Contains(err.Error(), "before the model trains") {
		t.Errorf("LoRA after training began: %v", err)
	}
}
