package weights

import (
	"errors"
	"math"
	"slices"
	"testing"

	"whale/core/model"
	"whale/kernels"
)

func tiny(t *testing.T, seed uint64) (*model.Model, *model.Trainer) {
	t.Helper()
	cfg, _ := model.Preset("tiny")
	m, err := model.New(cfg, kernels.NewCPU(), seed)
	if err != nil {
		t.Fatal(err)
	}
	tc := model.DefaultTrainConfig()
	tc.Schedule = model.ConstantLR(1e-2)
	tc.WeightDecay = 0
	tr, err := model.NewTrainer(m, tc)
	if err != nil {
		t.Fatal(err)
	}
	return m, tr
}

func sample(group string, reward float64, failure string, prompt, completion []int32) Sample {
	return Sample{Group: group, Reward: reward, Failure: failure,
		Calls: []Call{{Prompt: prompt, Completion: completion, LogProbs: make([]float32, len(completion))}}}
}

func TestSequencesMaskOnlyCompletion(t *testing.T) {
	s := Sample{Calls: []Call{{Prompt: []int32{1, 2, 3}, Completion: []int32{4, 5}}, {Prompt: []int32{1}, Completion: nil}}}
	seqs := sequences(s, 0.5)
	if len(seqs) != 1 {
		t.Fatalf("%d sequences, want 1 (an empty completion trains nothing)", len(seqs))
	}
	want := []float32{0, 0, 0, 0.5, 0.5}
	for i, w := range seqs[0].Mask {
		if w != want[i] {
			t.Fatalf("mask %v, want %v", seqs[0].Mask, want)
		}
	}
}

func TestRSFTFiltersAndTrainsKeptOnly(t *testing.T) {
	m, tr := tiny(t, 1)
	before := m.ParamValues()
	r := NewRSFT(tr)
	rejected := []Sample{
		sample("a", 0, "wrong", []int32{1, 2}, []int32{3, 4}),
		sample("a", 0, "format", []int32{1, 2}, []int32{5}),
		sample("b", 0.25, "", []int32{1, 2}, []int32{5}),
	}
	st, err := r.Step(rejected)
	if err != nil {
		t.Fatal(err)
	}
	if st.Updated || st.Kept != 0 || st.Rejected["wrong"] != 1 || st.Rejected["format"] != 1 || st.Rejected["low_reward"] != 1 {
		t.Fatalf("all-rejected batch: %+v", st)
	}
	after := m.ParamValues()
	for i := range before {
		if before[i] != after[i] {
			t.Fatal("weights changed although nothing was kept")
		}
	}
	// Training on one kept rollout raises its completion's probability and
	// leaves a rejected one's untouched by design (it is never a target).
	kept := sample("a", 1, "", []int32{1, 2, 3}, []int32{7, 8, 9})
	lp0, _ := logProb(m, kept)
	for i := 0; i < 5; i++ {
		st, err = r.Step(append(rejected, kept))
		if err != nil {
			t.Fatal(err)
		}
	}
	lp1, _ := logProb(m, kept)
	if st.Kept != 1 || st.Trained != 1 || !st.Updated || st.Tokens != 3 {
		t.Fatalf("stats %+v: want 1 kept, 3 trained tokens", st)
	}
	if !(lp1 > lp0+1) {
		t.Fatalf("log p of the kept completion went %v → %v, want a clear rise", lp0, lp1)
	}
	r.Threshold = 2
	if _, err := r.Step(rejected); err == nil {
		t.Fatal("threshold 2 accepted")
	}
}

func TestDPOTermsHandComputed(t *testing.T) {
	// β = 0.1, winner margin +1, loser margin −1: z = 0.2,
	// loss = log(1 + e^−0.2) = 0.5981388693, c = 0.1·σ(−0.2) = 0.0450166003.
	loss, c := dpoTerms(-3, -5, -4, -4, 0.1)
	if math.Abs(loss-0.5981388693) > 1e-9 || math.Abs(c-0.0450166003) > 1e-9 {
		t.Fatalf("loss %.10f c %.10f", loss, c)
	}
	// Large |z| must not overflow.
	if l, _ := dpoTerms(0, 1e6, 0, 0, 1); math.IsInf(l, 0) || math.Abs(l-1e6) > 1e-6 {
		t.Fatalf("loss for z = −1e6: %v", l)
	}
}

func TestDPOStepLowersItsLoss(t *testing.T) {
	m, tr := tiny(t, 2)
	ref, _ := tiny(t, 2)
	d := &DPO{Model: m, Trainer: tr, Ref: ref, Beta: 0.5, Threshold: DefaultThreshold}
	batch := []Sample{
		sample("g", 1, "", []int32{1, 2}, []int32{3, 4, 5}),
		sample("g", 0, "wrong", []int32{1, 2}, []int32{6, 7, 8}),
		sample("h", 0, "wrong", []int32{4}, []int32{9}), // no partner: unused
	}
	first, err := d.Step(batch)
	if err != nil {
		t.Fatal(err)
	}
	if first.Pairs != 1 || first.Trained != 2 || math.Abs(first.Loss-math.Log(2)) > 1e-4 {
		t.Fatalf("first step %+v: want 1 pair at loss log 2 (policy = reference)", first)
	}
	var last Stats
	for i := 0; i < 4; i++ {
		if last, err = d.Step(batch); err != nil {
			t.Fatal(err)
		}
	}
	if !(last.Loss < first.Loss-0.05) {
		t.Fatalf("DPO loss %v → %v, want a clear fall", first.Loss, last.Loss)
	}
}

func TestGRPOAdvantagesAndClip(t *testing.T) {
	a := advantages([]float64{1, 0, 0, 1})
	for i, want := range []float64{1, -1, -1, 1} {
		if math.Abs(a[i]-want) > 1e-5 {
			t.Fatalf("advantages %v", a)
		}
	}
	if z := advantages([]float64{1, 1, 1}); z[0] != 0 || z[2] != 0 {
		t.Fatalf("flat group advantages %v, want zeros", z)
	}
	// Unclipped: A·ρ/n. Clipped above for A > 0 and below for A < 0: 0.
	if w := grpoWeight(1.1, 2, 0, 0, 0.2, 4); math.Abs(w-0.55) > 1e-12 {
		t.Fatalf("unclipped weight %v, want 0.55", w)
	}
	if w := grpoWeight(1.3, 2, 0, 0, 0.2, 4); w != 0 {
		t.Fatalf("ratio above 1+ε with A > 0 must clip, weight %v", w)
	}
	if w := grpoWeight(0.7, -1, 0, 0, 0.2, 4); w != 0 {
		t.Fatalf("ratio below 1−ε with A < 0 must clip, weight %v", w)
	}
	if w := grpoWeight(0.7, 1, 0, 0, 0.2, 4); math.Abs(w-0.175) > 1e-12 {
		t.Fatalf("ratio below 1−ε with A > 0 keeps its gradient, weight %v", w)
	}
	// KL: δ = ln 2 gives ∂J/∂log π_t = −β(1 − 2)/n = β/n.
	if w := grpoWeight(1, 0, math.Ln2, 0.5, 0.2, 5); math.Abs(w-0.1) > 1e-12 {
		t.Fatalf("KL-only weight %v, want 0.1", w)
	}
}

func TestGRPOStepFavoursTheBetterRollout(t *testing.T) {
	m, tr := tiny(t, 3)
	g := &GRPO{Model: m, Trainer: tr, Clip: 0.2, Epochs: 1, Threshold: DefaultThreshold}
	good := sample("g", 1, "", []int32{1, 2}, []int32{3, 4})
	bad := sample("g", 0, "wrong", []int32{1, 2}, []int32{5, 6})
	for _, s := range []*Sample{&good, &bad} { // record sampling-time log-probs
		lp, _ := m.SequenceLogProbs(sequences(*s, 1))
		s.Calls[0].LogProbs = []float32{float32(lp[0]) / 2, float32(lp[0]) / 2}
	}
	g0, _ := logProb(m, good)
	b0, _ := logProb(m, bad)
	st, err := g.Step([]Sample{good, bad, sample("flat", 1, "", []int32{1}, []int32{2})})
	if err != nil {
		t.Fatal(err)
	}
	g1, _ := logProb(m, good)
	b1, _ := logProb(m, bad)
	if st.Trained != 2 || !(g1 > g0) || !(b1 < b0) {
		t.Fatalf("stats %+v; log p good %v → %v, bad %v → %v", st, g0, g1, b0, b1)
	}
	if _, err := (&GRPO{Model: m, Trainer: tr, Clip: 0.2, KLBeta: 0.1}).Step(nil); err == nil {
		t.Fatal("KL without a reference model accepted")
	}
}

func TestNonFiniteRefusedUnchanged(t *testing.T) {
	m, tr := tiny(t, 4)
	if err := m.WriteParam("model.norm.weight", []float32{float32(math.NaN()), 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	before := m.ParamValues()
	_, err := NewRSFT(tr).Step([]Sample{sample("a", 1, "", []int32{1}, []int32{2, 3})})
	if !errors.Is(err, model.ErrNonFinite) {
		t.Fatalf("poisoned weights: error %v, want ErrNonFinite", err)
	}
	after := m.ParamValues()
	for i := range before {
		if math.Float32bits(before[i]) != math.Float32bits(after[i]) {
			t.Fatalf("parameter %d changed by a refused step", i)
		}
	}
}

func TestMicroBatchesBoundPaddedTokens(t *testing.T) {
	var seqs []model.Sequence
	for _, n := range []int{5, 5, 3, 9, 2, 20} {
		seqs = append(seqs, model.Sequence{Tokens: make([]int32, n), Mask: make([]float32, n)})
	}
	mbs := microBatches(seqs, 12)
	total := 0
	for _, mb := range mbs {
		longest := 0
		for _, s := range mb {
			longest = max(longest, len(s.Tokens))
		}
		if longest*len(mb) > 12 && len(mb) > 1 {
			t.Fatalf("micro-batch of %d × %d padded tokens exceeds 12", len(mb), longest)
		}
		total += len(mb)
	}
	if total != len(seqs) {
		t.Fatalf("%d sequences in micro-batches, want %d", total, len(seqs))
	}
}

// Sequences that begin with the same prompt come out side by side, in
// one micro-batch, whatever their order in the step.
func TestMicroBatchesPutAPromptsSamplesTogether(t *testing.T) {
	seq := func(toks ...int32) model.Sequence {
		return model.Sequence{Tokens: toks, Mask: make([]float32, len(toks))}
	}
	in := []model.Sequence{seq(1, 2, 3, 9), seq(4, 5, 6, 7), seq(1, 2, 3, 8, 8), seq(4, 5, 1), seq(1, 2, 3, 7)}
	mbs := microBatches(in, 100)
	if len(mbs) != 1 || len(mbs[0]) != 5 {
		t.Fatalf("micro-batches %v, want one of five", mbs)
	}
	var firsts []int32
	for _, s := range mbs[0] {
		firsts = append(firsts, s.Tokens[0])
	}
	if !slices.Equal(firsts, []int32{1, 1, 1, 4, 4}) {
		t.Fatalf("sequences by first token %v, want a prompt's samples side by side", firsts)
	}
	if in[1].Tokens[0] != 4 {
		t.Fatal("microBatches reordered its caller's slice")
	}
}

// TestGRPOOldFromModelIgnoresTheSamplersLogProbs: with OldFromModel the
// old policy is the model's own forward pass, so the sampler's
// log-probabilities, however wrong, change nothing: the update equals the
// one from exact float32 log-probabilities, while the same wrong values
// taken as the old policy clip the update differently.
func TestGRPOOldFromModelIgnoresTheSamplersLogProbs(t *testing.T) {
	step := func(fromModel bool, lps func(m *model.Model, s Sample) []float32) float64 {
		m, tr := tiny(t, 3)
		good := sample("g", 1, "", []int32{1, 2}, []int32{3, 4})
		bad := sample("g", 0, "wrong", []int32{1, 2}, []int32{5, 6})
		for _, s := range []*Sample{&good, &bad} {
			s.Calls[0].LogProbs = lps(m, *s)
		}
		g := &GRPO{Model: m, Trainer: tr, Clip: 0.2, Epochs: 2, Threshold: DefaultThreshold, OldFromModel: fromModel}
		if _, err := g.Step([]Sample{good, bad}); err != nil {
			t.Fatal(err)
		}
		lp, err := logProb(m, good)
		if err != nil {
			t.Fatal(err)
		}
		return lp
	}
	wrong := func(*model.Model, Sample) []float32 { return []float32{-9, -9} }
	exact := func(m *model.Model, s Sample) []float32 {
		lp, err := m.TokenLogProbs([]model.Sequence{sequences(s, 1)[0]})
		if err != nil {
			t.Fatal(err)
		}
		c := s.Calls[0].Completion
		out := make([]float32, len(c))
		for i, v := range lp[0][len(lp[0])-len(c):] {
			out[i] = float32(v)
		}
		return out
	}
	fromModel, withExact := step(true, wrong), step(true, exact)
	if fromModel != withExact {
		t.Fatalf("OldFromModel: log p(good) after the update %v with wrong sampler log-probs, %v with exact ones", fromModel, withExact)
	}
	if sampler := step(false, exact); math.Abs(sampler-fromModel) > 1e-4 {
		t.Fatalf("exact sampler log-probs give log p(good) %v, the model's own %v", sampler, fromModel)
	}
	if clipped := step(false, wrong); math.Abs(clipped-fromModel) < 1e-4 {
		t.Fatalf("wrong sampler log-probs taken as the old policy changed nothing (%v): the test cannot tell", clipped)
	}
}

// A two-turn episode whose second prompt extends the first turn trains as
// one sequence carrying both completions' weights; a call that does not
// extend stays a sequence of its own, and a call repeated token for token
// keeps both of its terms.
func TestSequencesTrainAnEarlierTurnInsideTheNext(t *testing.T) {
	turn1 := Call{Prompt: []int32{1, 2, 3}, Completion: []int32{4, 5}}
	turn2 := Call{Prompt: []int32{1, 2, 3, 4, 5, 6, 7}, Completion: []int32{8, 9}}
	other := Call{Prompt: []int32{1, 2}, Completion: []int32{7}}
	seqs := sequences(Sample{Calls: []Call{turn1, other, turn2}}, 0.5)
	if len(seqs) != 2 {
		t.Fatalf("%d sequences, want 2 (turn 1 inside turn 2, the other call alone)", len(seqs))
	}
	if want := []int32{1, 2}; !slices.Equal(seqs[0].Tokens, append(want, 7)) {
		t.Fatalf("first sequence %v, want the other call first, in call order", seqs[0].Tokens)
	}
	if want := []float32{0, 0, 0, 0.5, 0.5, 0, 0, 0.5, 0.5}; !slices.Equal(seqs[1].Mask, want) {
		t.Fatalf("merged mask %v, want %v", seqs[1].Mask, want)
	}
	seqs = sequences(Sample{Calls: []Call{turn1, turn1, turn2}}, 1)
	if want := []float32{0, 0, 0, 2, 2, 0, 0, 1, 1}; len(seqs) != 1 || !slices.Equal(seqs[0].Mask, want) {
		t.Fatalf("a repeated turn: %d sequences, mask %v, want one with %v", len(seqs), seqs[0].Mask, want)
	}
	seqs = sequences(Sample{Calls: []Call{{Prompt: []int32{1, 2, 3}, Completion: []int32{4, 6}}, turn2}}, 1)
	if len(seqs) != 2 {
		t.Fatalf("a turn whose completion differs from the next prompt's tokens merged: %d sequences", len(seqs))
	}
}

// Training a multi-turn sample through its merged sequence is the same
// step as training each call's sequence on its own: the same token total,
// loss and gradient norm up to float32 summation order, and the same
// log-probabilities at the earlier turn's positions.
func TestMergedTurnsTrainTheSameStep(t *testing.T) {
	p1 := []int32{1, 2, 3, 4, 5, 6}
	c1 := []int32{7, 8, 9, 10}
	tool := []int32{11, 12, 13}
	p2 := append(append(append([]int32(nil), p1...), c1...), tool...)
	c2 := []int32{14, 15, 16, 17, 18}
	s := Sample{Reward: 1, Calls: []Call{{Prompt: p1, Completion: c1}, {Prompt: p2, Completion: c2}}}
	if got := sequences(s, 1); len(got) != 1 {
		t.Fatalf("%d sequences, want the first turn merged into the second", len(got))
	}
	apart := func(c Call) model.Sequence {
		toks := append(append([]int32(nil), c.Prompt...), c.Completion...)
		mask := make([]float32, len(toks))
		for i := len(c.Prompt); i < len(toks); i++ {
			mask[i] = 1
		}
		return model.Sequence{Tokens: toks, Mask: mask}
	}
	m1, tr1 := tiny(t, 3)
	m2, tr2 := tiny(t, 3)
	lpMerged, err := m1.TokenLogProbs(sequences(s, 1))
	if err != nil {
		t.Fatal(err)
	}
	lpApart, err := m2.TokenLogProbs([]model.Sequence{apart(s.Calls[0])})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(p1); i < len(p1)+len(c1); i++ {
		if d := math.Abs(lpMerged[0][i] - lpApart[0][i]); d > 1e-5 {
			t.Fatalf("log p of turn 1's token %d: merged %v, apart %v", i, lpMerged[0][i], lpApart[0][i])
		}
	}
	merged, err := tr1.Step(microBatches(sequences(s, 1), 8192))
	if err != nil {
		t.Fatal(err)
	}
	sep, err := tr2.Step([][]model.Sequence{{apart(s.Calls[0]), apart(s.Calls[1])}})
	if err != nil {
		t.Fatal(err)
	}
	if merged.Tokens != sep.Tokens {
		t.Fatalf("token total %v merged, %v apart", merged.Tokens, sep.Tokens)
	}
	// The same terms summed in another order: a few float32 ulps apart
	// (measured 1e-8 relative), far below what a lost or misplaced weight
	// moves.
	if d := math.Abs(merged.Loss-sep.Loss) / sep.Loss; d > 1e-6 {
		t.Fatalf("loss %v merged, %v apart (relative %.2g)", merged.Loss, sep.Loss, d)
	}
	if d := math.Abs(merged.GradNorm-sep.GradNorm) / sep.GradNorm; d > 1e-6 {
		t.Fatalf("gradient norm %v merged, %v apart (relative %.2g)", merged.GradNorm, sep.GradNorm, d)
	}
	t.Logf("loss %v / %v, gradient norm %v / %v", merged.Loss, sep.Loss, merged.GradNorm, sep.GradNorm)
}
