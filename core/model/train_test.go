package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"whale/kernels"
)

func tinyModel(t *testing.T, be kernels.Backend, seed uint64) *Model {
	t.Helper()
	cfg, err := Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg, be, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fixedBatch(V int) []Sequence {
	rng := rand.New(rand.NewPCG(11, 12))
	var seqs []Sequence
	for b := 0; b < 4; b++ {
		n := 8 + 2*b
		q := Sequence{Tokens: make([]int32, n), Mask: make([]float32, n)}
		for i := range q.Tokens {
			q.Tokens[i] = int32(rng.IntN(V))
			if i >= 3 {
				q.Mask[i] = 1
			}
		}
		seqs = append(seqs, q)
	}
	return seqs
}

func TestOverfitFixedBatch(t *testing.T) {
	m := tinyModel(t, kernels.NewCPU(), 1)
	cfg := DefaultTrainConfig()
	cfg.Schedule, cfg.WeightDecay = ConstantLR(1e-2), 0
	tr, err := NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	batch := fixedBatch(m.Config.VocabSize)
	var st StepStats
	for i := 0; i < 600; i++ {
		if st, err = tr.Step([][]Sequence{batch}); err != nil {
			t.Fatal(err)
		}
		if st.Loss < 0.05 {
			break
		}
	}
	loss, err := m.Loss(batch)
	if err != nil {
		t.Fatal(err)
	}
	if loss >= 0.05 {
		t.Fatalf("after %d steps the loss is %.4f, want < 0.05", st.Step, loss)
	}
	t.Logf("memorised in %d steps, loss %.4f", st.Step, loss)
}

func trainTen(t *testing.T, seed uint64) []float32 {
	m := tinyModel(t, kernels.NewCPU(), seed)
	cfg := DefaultTrainConfig()
	cfg.Schedule = CosineLR{Peak: 3e-3, Floor: 3e-4, Warmup: 3, Total: 10}
	tr, err := NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := fixedBatch(m.Config.VocabSize)
	for i := 0; i < 10; i++ {
		if _, err := tr.Step([][]Sequence{b[:1], b[1:]}); err != nil {
			t.Fatal(err)
		}
	}
	return m.ParamValues()
}

func bitsEqual(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

func TestTrainingDeterministic(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(1)
	a := trainTen(t, 5)
	b := trainTen(t, 5)
	kernels.SetThreads(2)
	c := trainTen(t, 5)
	if i := bitsEqual(a, b); i >= 0 {
		t.Fatalf("two runs from seed 5 differ at parameter %d", i)
	}
	if i := bitsEqual(a, c); i >= 0 {
		t.Fatalf("1 and 2 threads differ at parameter %d: %v vs %v", i, a[i], c[i])
	}
	if d := trainTen(t, 6); bitsEqual(a, d) < 0 {
		t.Fatal("seeds 5 and 6 trained to identical weights")
	}
}

// TestMicroBatchesMatchOneBatch: splitting a batch into micro-batches only
// changes rounding (float64 backend, so ≤ 1e-12 relative).
func TestMicroBatchesMatchOneBatch(t *testing.T) {
	m := tinyModel(t, kernels.NewCPU64(), 1)
	tr, err := NewTrainer(m, DefaultTrainConfig())
	if err != nil {
		t.Fatal(err)
	}
	b := fixedBatch(m.Config.VocabSize)
	l1, _, err := tr.accumulate([][]Sequence{b})
	if err != nil {
		t.Fatal(err)
	}
	g1 := make([]float64, m.grad.Len())
	m.be.Store64(g1, m.grad)
	l2, _, err := tr.accumulate([][]Sequence{b[:1], b[1:3], b[3:]})
	if err != nil {
		t.Fatal(err)
	}
	g2 := make([]float64, m.grad.Len())
	m.be.Store64(g2, m.grad)
	if math.Abs(l1-l2) > 1e-12*l1 {
		t.Fatalf("loss %v as one batch, %v as micro-batches", l1, l2)
	}
	var dd, nn float64
	for i := range g1 {
		dd += (g1[i] - g2[i]) * (g1[i] - g2[i])
		nn += g1[i] * g1[i]
	}
	if math.Sqrt(dd) > 1e-12*math.Sqrt(nn) {
		t.Fatalf("gradients differ by %.3g relative", math.Sqrt(dd/nn))
	}
}

func TestNonFiniteStepRefused(t *testing.T) {
	m := tinyModel(t, kernels.NewCPU(), 1)
	tr, err := NewTrainer(m, DefaultTrainConfig())
	if err != nil {
		t.Fatal(err)
	}
	b := fixedBatch(m.Config.VocabSize)
	if _, err := tr.Step([][]Sequence{b}); err != nil {
		t.Fatal(err)
	}
	before, state := m.ParamValues(), tr.State()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNonFinite) {
			t.Fatalf("%s: got %v, want ErrNonFinite", what, err)
		}
		if i := bitsEqual(before, m.ParamValues()); i >= 0 {
			t.Fatalf("%s: parameter %d changed", what, i)
		}
		s := tr.State()
		if s.Step != state.Step || bitsEqual(s.M, state.M) >= 0 || bitsEqual(s.V, state.V) >= 0 {
			t.Fatalf("%s: optimizer state changed", what)
		}
	}
	// A poisoned gradient with a finite loss.
	loss, tok, err := tr.accumulate([][]Sequence{b})
	if err != nil {
		t.Fatal(err)
	}
	m.be.Load(m.grad.View(17, 1), []float32{float32(math.Inf(1))})
	_, err = tr.apply(loss, tok)
	check("inf gradient", err)

	// A poisoned parameter makes the loss NaN.
	w := before[m.params[len(m.params)-1].Offset]
	m.be.Load(m.arena.View(m.params[len(m.params)-1].Offset, 1), []float32{float32(math.NaN())})
	before = m.ParamValues()
	_, err = tr.Step([][]Sequence{b})
	check("NaN parameter", err)
	m.be.Load(m.arena.View(m.params[len(m.params)-1].Offset, 1), []float32{w})
	if _, err := tr.Step([][]Sequence{b}); err != nil {
		t.Fatalf("step after repair: %v", err)
	}
}

func TestOptimizerStateRoundTrip(t *testing.T) {
	b := fixedBatch(19)
	m1 := tinyModel(t, kernels.NewCPU(), 3)
	t1, _ := NewTrainer(m1, DefaultTrainConfig())
	for i := 0; i < 3; i++ {
		if _, err := t1.Step([][]Sequence{b}); err != nil {
			t.Fatal(err)
		}
	}
	m2 := tinyModel(t, kernels.NewCPU(), 99)
	if err := m2.SetParamValues(m1.ParamValues()); err != nil {
		t.Fatal(err)
	}
	t2, _ := NewTrainer(m2, DefaultTrainConfig())
	if err := t2.SetState(t1.State()); err != nil {
		t.Fatal(err)
	}
	t1.Step([][]Sequence{b})
	t2.Step([][]Sequence{b})
	if i := bitsEqual(m1.ParamValues(), m2.ParamValues()); i >= 0 {
		t.Fatalf("resumed trainer differs at parameter %d", i)
	}
	if err := t2.SetState(OptimizerState{M: []float32{1}}); err == nil {
		t.Fatal("SetState accepted moments of the wrong size")
	}
}

func TestSchedules(t *testing.T) {
	c := CosineLR{Peak: 1, Floor: 0.1, Warmup: 10, Total: 110}
	for _, x := range []struct {
		step int
		want float64
	}{{1, 0.1}, {5, 0.5}, {10, 1}, {60, 0.55}, {110, 0.1}, {500, 0.1}} {
		if got := c.LR(x.step); math.Abs(got-x.want) > 1e-12 {
			t.Errorf("cosine LR(%d) = %v, want %v", x.step, got, x.want)
		}
	}
	if ConstantLR(0.3).LR(1000) != 0.3 {
		t.Error("constant LR changed")
	}
}

func TestTrainInputErrors(t *testing.T) {
	m := tinyModel(t, kernels.NewCPU(), 1)
	tr, _ := NewTrainer(m, DefaultTrainConfig())
	for name, b := range map[string][]Sequence{
		"mask length": {{Tokens: []int32{1, 2}, Mask: []float32{1}}},
		"token range": {{Tokens: []int32{1, 99}, Mask: []float32{0, 1}}},
		"all masked":  {{Tokens: []int32{1, 2}, Mask: []float32{1, 0}}},
		"negative":    {{Tokens: []int32{1, 2}, Mask: []float32{0, -1}}},
		"too long":    {{Tokens: make([]int32, 80), Mask: slices.Repeat([]float32{1}, 80)}},
	} {
		if _, err := tr.Step([][]Sequence{b}); err == nil {
			t.Errorf("%s: step accepted a bad batch", name)
		}
	}
}

// mediumConfig is large enough that the float32 GEMMs split work across
// threads and switch kernels by shape, which the tiny preset never does.
func mediumConfig() Config {
	return Config{ModelType: "qwen3", VocabSize: 96, HiddenSize: 64, IntermediateSize: 160, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e4,
		MaxPositionEmbeddings: 96, HiddenAct: "silu"}
}

func TestTrainingThreadInvariantMedium(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	run := func(threads int) []float32 {
		kernels.SetThreads(threads)
		m, err := New(mediumConfig(), kernels.NewCPU(), 3)
		if err != nil {
			t.Fatal(err)
		}
		tr, _ := NewTrainer(m, DefaultTrainConfig())
		rng := rand.New(rand.NewPCG(1, 1))
		var b []Sequence
		for i := 0; i < 4; i++ {
			q := Sequence{Tokens: randPrompt(rng, 40+5*i, 96), Mask: slices.Repeat([]float32{1}, 40+5*i)}
			b = append(b, q)
		}
		for i := 0; i < 3; i++ {
			if _, err := tr.Step([][]Sequence{b}); err != nil {
				t.Fatal(err)
			}
		}
		return m.ParamValues()
	}
	a, b := run(1), run(2)
	if i := bitsEqual(a, b); i >= 0 {
		t.Fatalf("1 and 2 threads differ at parameter %d: %v vs %v", i, a[i], b[i])
	}
}

func TestSequenceLogProbs(t *testing.T) {
	m := sampleModel(t)
	b := fixedBatch(m.d.V)
	got, err := m.SequenceLogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range b {
		full, _ := m.Logits(q.Tokens[:len(q.Tokens)-1])
		var want float64
		for p := 1; p < len(q.Tokens); p++ {
			want += float64(q.Mask[p]) * logSoftmax(full[(p-1)*m.d.V:p*m.d.V], q.Tokens[p])
		}
		// float32 forward, sums of ~10 log-probs of order 3.
		if math.Abs(got[i]-want) > 1e-4 {
			t.Errorf("sequence %d: log-prob %v, want %v", i, got[i], want)
		}
	}
}

// TestTokenLogProbs: each position's term is the masked log-softmax of
// the full forward pass at the position before it, and the terms sum to
// SequenceLogProbs's.
func TestTokenLogProbs(t *testing.T) {
	m := sampleModel(t)
	b := fixedBatch(m.d.V)
	per, err := m.TokenLogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	sums, _ := m.SequenceLogProbs(b)
	for i, q := range b {
		full, _ := m.Logits(q.Tokens[:len(q.Tokens)-1])
		if len(per[i]) != len(q.Tokens) || per[i][0] != 0 {
			t.Fatalf("sequence %d: %d terms (first %v), want %d from 0", i, len(per[i]), per[i][0], len(q.Tokens))
		}
		var sum float64
		for p := 1; p < len(q.Tokens); p++ {
			want := float64(q.Mask[p]) * logSoftmax(full[(p-1)*m.d.V:p*m.d.V], q.Tokens[p])
			// float32 forward, one log-prob of order 3: 1e-5 (its sum's 1e-4 over ~10).
			if math.Abs(per[i][p]-want) > 1e-5 {
				t.Errorf("sequence %d position %d: %v, want %v", i, p, per[i][p], want)
			}
			sum += per[i][p]
		}
		if math.Abs(sum-sums[i]) > 1e-9 {
			t.Errorf("sequence %d: terms sum to %v, SequenceLogProbs %v", i, sum, sums[i])
		}
	}
}

func TestStepWeighted(t *testing.T) {
	b := fixedBatch(19)
	m1, m2 := tinyModel(t, kernels.NewCPU(), 4), tinyModel(t, kernels.NewCPU(), 4)
	t1, _ := NewTrainer(m1, DefaultTrainConfig())
	t2, _ := NewTrainer(m2, DefaultTrainConfig())
	total, _ := m1.maskSum(b)
	if _, err := t1.Step([][]Sequence{b}); err != nil {
		t.Fatal(err)
	}
	if _, err := t2.StepWeighted([][]Sequence{b}, total); err != nil {
		t.Fatal(err)
	}
	if i := bitsEqual(m1.ParamValues(), m2.ParamValues()); i >= 0 {
		t.Fatalf("StepWeighted with norm Σ mask differs from Step at parameter %d", i)
	}
	// A negative weight pushes the sequence's probability down.
	neg := []Sequence{{Tokens: b[0].Tokens, Mask: slices.Clone(b[0].Mask)}}
	for i := range neg[0].Mask {
		neg[0].Mask[i] = -neg[0].Mask[i]
	}
	before, _ := m2.SequenceLogProbs(b[:1])
	cfg := DefaultTrainConfig()
	cfg.Schedule = ConstantLR(1e-2)
	t3, _ := NewTrainer(m2, cfg)
	if _, err := t3.StepWeighted([][]Sequence{neg}, 5); err != nil {
		t.Fatal(err)
	}
	after, _ := m2.SequenceLogProbs(b[:1])
	if !(after[0] < before[0]) {
		t.Fatalf("negative weights raised the log-prob from %v to %v", before[0], after[0])
	}
	if _, err := t3.StepWeighted([][]Sequence{neg}, 0); err == nil {
		t.Fatal("norm 0 accepted")
	}
}
