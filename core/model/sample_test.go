package model

import (
	"context"
	"fmt"
	"gonum.org/v1/gonum/stat/distuv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"whale/core/policy"
	"whale/kernels"
)

// sampleModel is the tiny preset (GQA, qk-norm, bias, untied) with weights
// scaled up so its distributions are far from uniform.
func sampleModel(t *testing.T) *Model {
	t.Helper()
	m := tinyModel(t, kernels.NewCPU(), 1)
	randomize(m, 9)
	return m
}

func randPrompt(rng *rand.Rand, n, V int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(rng.IntN(V))
	}
	return p
}

func generate(t *testing.T, s *Sampler, reqs ...Request) []Completion {
	t.Helper()
	out, err := s.Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func logSoftmax(row []float32, tok int32) float64 {
	mx := slices.Max(row)
	var z float64
	for _, v := range row {
		z += math.Exp(float64(v - mx))
	}
	return float64(row[tok]-mx) - math.Log(z)
}

// TestCompletionEntropy checks Completion.Entropy against the mean of
// -Σ p log p over the full-forward softmax at each sampled position,
// computed directly in float64 (a different formula from the sampler's
// log z - Σ e d / z). The logits of the two passes agree to ~1e-6 (see
// TestKVDecodeMatchesFullForward) and entropy is 1-Lipschitz in them up to
// a factor of the logit spread, so 1e-4 nats on values near log V ≈ 4 is
// far above rounding and far below a wrong position or temperature (which
// moves it by tenths).
func TestCompletionEntropy(t *testing.T) {
	m := sampleModel(t)
	s := NewSampler(m, SamplerOptions{})
	prompt := randPrompt(rand.New(rand.NewPCG(5, 5)), 9, m.d.V)
	c := generate(t, s, Request{Key: "h", Prompt: prompt, MaxNewTokens: 10, Temperature: 1.3, Seed: 3})[0]
	seq := append(slices.Clone(prompt), c.Tokens...)
	full, err := m.Logits(seq[:len(seq)-1])
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for i := range c.Tokens {
		row := full[(len(prompt)-1+i)*m.d.V : (len(prompt)+i)*m.d.V]
		var h float64
		for tok := range row {
			lp := logSoftmax(row, int32(tok))
			h -= math.Exp(lp) * lp
		}
		want += h / float64(len(c.Tokens))
	}
	if math.Abs(float64(c.Entropy)-want) > 1e-4 || want <= 0 {
		t.Fatalf("entropy %v, full-forward softmax entropy %v", c.Entropy, want)
	}
	// Greedy decoding reports the same model's entropy, not 0.
	g := generate(t, s, Request{Key: "g", Prompt: prompt, MaxNewTokens: 10})[0]
	if !(g.Entropy > 0) {
		t.Fatalf("greedy completion reports entropy %v", g.Entropy)
	}
}

// TestKVDecodeMatchesFullForward prefills a prompt longer than one GEMM
// row chunk, then feeds tokens one at a time, and compares the logits after
// every position with a full forward pass over the whole sequence. Both
// are float32 computations of the same function in different orders
// (different GEMM kernels, attention over a cache), so they agree to ~1e-6
// relative; 1e-5 of the largest logit leaves margin and still catches a
// wrong position, mask or cache row (errors of order 1).
func TestKVDecodeMatchesFullForward(t *testing.T) {
	for name, m := range sampleModels(t) {
		t.Run(name, func(t *testing.T) { testKVDecode(t, m) })
	}
}

// noPack hides the CPU backend's kernels.PackedNT, so the sampler runs its
// products on the plain weights (the path of backends that cannot pack).
type noPack struct{ kernels.Backend }

// sampleModels returns randomized models covering the sampler's three
// product paths: packed with q, k, v (gate, up) packed apart (tiny: head
// dimension 6), packed as views of the fused matrices (medium, gqa4), and
// unpacked; gqa4 groups four query heads per KV head.
func sampleModels(t *testing.T) map[string]*Model {
	t.Helper()
	model := func(c Config, seed, values uint64) *Model {
		m, err := New(c, kernels.NewCPU(), seed)
		if err != nil {
			t.Fatal(err)
		}
		randomize(m, values)
		return m
	}
	qwen := func(v, c, f, heads, kv, hd int) Config {
		return Config{ModelType: "qwen3", VocabSize: v, HiddenSize: c, IntermediateSize: f, NumHiddenLayers: 2,
			NumAttentionHeads: heads, NumKeyValueHeads: kv, HeadDim: hd, RMSNormEps: 1e-6, RopeTheta: 1e4,
			MaxPositionEmbeddings: 96, HiddenAct: "silu"}
	}
	return map[string]*Model{"tiny": sampleModel(t), "medium": model(mediumConfig(), 2, 3),
		// Four query heads per KV head: decode attention's one-pass kernels.
		"gqa4": model(qwen(50, 32, 48, 8, 2, 8), 4, 5),
		// Widths that are multiples of 64: its packed q, k, v (gate, up)
		// are views of the fused matrices.
		"wide":     model(qwen(96, 64, 128, 4, 2, 32), 6, 7),
		"unpacked": tinyModelOn(t, noPack{kernels.NewCPU()})}
}

func tinyModelOn(t *testing.T, be kernels.Backend) *Model {
	t.Helper()
	m := tinyModel(t, be, 1)
	randomize(m, 9)
	return m
}

func testKVDecode(t *testing.T, m *Model) {
	rng := rand.New(rand.NewPCG(1, 1))
	toks := randPrompt(rng, 50, m.d.V)
	full, err := m.Logits(toks)
	if err != nil {
		t.Fatal(err)
	}
	s := NewSampler(m, SamplerOptions{})
	s.refresh()
	if _, packs := m.be.(kernels.PackedNT); packs != (s.pk != nil) {
		t.Fatalf("backend packs: %v, sampler packed: %v", packs, s.pk != nil)
	}
	P := 21
	q := &seqState{toks: toks, cap: len(toks), req: &Request{Prompt: toks[:P]}}
	s.allocOwn(q) // a prompt of 21 tokens has no whole KVBlock to share
	s.forward([]work{{s: q, from: 0, to: P}}, true)
	for pos := P; ; pos++ {
		want := full[(pos-1)*m.d.V : pos*m.d.V]
		var d, mx float64
		for j, v := range q.logits {
			d = max(d, math.Abs(float64(v-want[j])))
			mx = max(mx, math.Abs(float64(want[j])))
		}
		if d > 1e-5*mx {
			t.Fatalf("logits after %d tokens: cached decode differs from full forward by %.3g (max |logit| %.3g)", pos, d, mx)
		}
		if pos == len(toks) {
			break
		}
		s.forward([]work{{s: q, from: pos, to: pos + 1}}, false)
	}
}

// checkGreedy checks a greedy completion c of prompt against the full
// forward pass: each token the argmax of its logits, each log-probability
// their log-softmax within 1e-4 (float32, values of order 1).
func checkGreedy(t *testing.T, m *Model, prompt []int32, c Completion) {
	t.Helper()
	seq := append(slices.Clone(prompt), c.Tokens...)
	full, err := m.Logits(seq[:len(seq)-1])
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range c.Tokens {
		row := full[(len(prompt)-1+i)*m.d.V : (len(prompt)+i)*m.d.V]
		if arg := int32(slices.Index(row, slices.Max(row))); arg != tok {
			t.Fatalf("token %d: greedy sampled %d, argmax is %d", i, tok, arg)
		}
		if lp := logSoftmax(row, tok); math.Abs(lp-float64(c.LogProbs[i])) > 1e-4 {
			t.Fatalf("token %d: log-prob %v, log-softmax %v", i, c.LogProbs[i], lp)
		}
	}
}

// TestGreedyIsArgmax checks temperature 0 against argmax of full-forward
// logits at every step, and the returned log-probabilities against their
// log-softmax (float32, ≤ 1e-4 absolute on values of order 1).
func TestGreedyIsArgmax(t *testing.T) {
	m := sampleModel(t)
	s := NewSampler(m, SamplerOptions{})
	prompt := randPrompt(rand.New(rand.NewPCG(2, 2)), 7, m.d.V)
	c := generate(t, s, Request{Key: "g", Prompt: prompt, MaxNewTokens: 12})[0]
	if c.Finish != policy.FinishLength || len(c.Tokens) != 12 || len(c.LogProbs) != 12 {
		t.Fatalf("got %d tokens, finish %s; want 12, length", len(c.Tokens), c.Finish)
	}
	checkGreedy(t, m, prompt, c)
	// Top-k 1 at any temperature is greedy too.
	k1 := generate(t, s, Request{Key: "k", Prompt: prompt, MaxNewTokens: 12, Temperature: 1.3, TopK: 1})[0]
	if !slices.Equal(k1.Tokens, c.Tokens) || !slices.Equal(k1.LogProbs, c.LogProbs) {
		t.Fatalf("top-k 1 gave %v, greedy %v", k1.Tokens, c.Tokens)
	}
}

func TestFinishReasons(t *testing.T) {
	m := sampleModel(t)
	s := NewSampler(m, SamplerOptions{})
	prompt := []int32{1, 2, 3}
	all := make([]int32, m.d.V)
	for i := range all {
		all[i] = int32(i)
	}
	greedy := generate(t, s, Request{Prompt: prompt, MaxNewTokens: 5})[0]
	maxPos := m.Config.MaxPositionEmbeddings
	got := generate(t, s,
		Request{Key: "stop-any", Prompt: prompt, MaxNewTokens: 5, Temperature: 1, Stop: all},
		Request{Key: "stop-third", Prompt: prompt, MaxNewTokens: 5, Stop: []int32{greedy.Tokens[2]}},
		Request{Key: "len", Prompt: prompt, MaxNewTokens: 4, Temperature: 1},
		Request{Key: "ctx", Prompt: make([]int32, maxPos-3), MaxNewTokens: 10, Temperature: 1},
		Request{Key: "full", Prompt: make([]int32, maxPos+1), MaxNewTokens: 10},
	)
	idx := slices.Index(greedy.Tokens, greedy.Tokens[2]) + 1 // stops at the first occurrence
	for i, w := range []struct {
		n      int
		finish policy.FinishReason
	}{{1, policy.FinishStop}, {idx, policy.FinishStop}, {4, policy.FinishLength}, {4, policy.FinishContext}, {0, policy.FinishContext}} {
		if len(got[i].Tokens) != w.n || got[i].Finish != w.finish {
			t.Errorf("request %d: %d tokens, finish %q; want %d, %q", i, len(got[i].Tokens), got[i].Finish, w.n, w.finish)
		}
	}
	for _, bad := range []Request{{Prompt: nil, MaxNewTokens: 1}, {Prompt: prompt}, {Prompt: []int32{99}, MaxNewTokens: 1},
		{Prompt: prompt, MaxNewTokens: 1, TopP: 2}, {Prompt: prompt, MaxNewTokens: 1, Temperature: -1}} {
		if _, err := s.Generate(context.Background(), []Request{bad}); err == nil {
			t.Errorf("request %+v accepted", bad)
		}
	}
}

func sameCompletion(a, b Completion) bool {
	if a.Finish != b.Finish || !slices.Equal(a.Tokens, b.Tokens) || len(a.LogProbs) != len(b.LogProbs) {
		return false
	}
	for i := range a.LogProbs {
		if math.Float32bits(a.LogProbs[i]) != math.Float32bits(b.LogProbs[i]) {
			return false
		}
	}
	return true
}

func mixedRequests(V int) []Request {
	rng := rand.New(rand.NewPCG(3, 3))
	var rs []Request
	for i := 0; i < 30; i++ {
		rs = append(rs, Request{Key: fmt.Sprintf("r%d", i), Prompt: randPrompt(rng, 1+rng.IntN(30), V),
			MaxNewTokens: 1 + rng.IntN(20), Temperature: float32(rng.IntN(3)) * 0.6, TopK: rng.IntN(4) * 3,
			TopP: []float32{0, 0.9, 1}[rng.IntN(3)], Stop: []int32{int32(rng.IntN(V))}, Seed: 42})
	}
	return rs
}

// TestSamplingIndependentOfBatch: in Exact mode a request samples the
// same tokens and bit-identical log-probabilities alone, in a large batch,
// in another order, with continuous batching, and with 1 or 2 threads. In
// the default mode the same holds on packed weights; unpacked, the tokens
// are the same and the log-probabilities agree to float32 rounding (≤ 1e-5
// on values of order 1).
func TestSamplingIndependentOfBatch(t *testing.T) {
	for _, name := range []string{"tiny", "unpacked"} {
		t.Run(name, func(t *testing.T) { testIndependentOfBatch(t, sampleModels(t)[name]) })
	}
}

func testIndependentOfBatch(t *testing.T, m *Model) {
	defer kernels.SetThreads(kernels.Threads())
	_, packs := m.be.(kernels.PackedNT)
	packs = packs && !m.BaseBF16() // a bfloat16 base is read in place, never packed
	reqs := mixedRequests(m.d.V)
	exact := SamplerOptions{PrefixCacheBytes: -1, Exact: true}
	kernels.SetThreads(1)
	alone := make([]Completion, len(reqs))
	for i, r := range reqs {
		alone[i] = generate(t, NewSampler(m, exact), r)[0]
	}
	kernels.SetThreads(2)
	batch := generate(t, NewSampler(m, exact), reqs...)
	rev := slices.Clone(reqs)
	slices.Reverse(rev)
	revOut := generate(t, NewSampler(m, exact), rev...)
	// Continuous batching: at most 3 sequences at once, admitted as others
	// finish.
	small := generate(t, NewSampler(m, SamplerOptions{MaxBatch: 3, Exact: true}), reqs...)
	// A KV budget smaller than one sequence's cache runs one at a time.
	tight := generate(t, NewSampler(m, SamplerOptions{MaxKVBytes: 1, Exact: true}), reqs...)
	for i := range reqs {
		if !sameCompletion(alone[i], tight[i]) {
			t.Fatalf("request %d: alone %v, under a tight KV budget %v", i, alone[i].Tokens, tight[i].Tokens)
		}
	}
	fast := generate(t, NewSampler(m, SamplerOptions{}), reqs...)
	for i := range reqs {
		if !sameCompletion(alone[i], small[i]) {
			t.Fatalf("request %d: alone %v, with MaxBatch 3 %v", i, alone[i].Tokens, small[i].Tokens)
		}
		if !sameCompletion(alone[i], batch[i]) || !sameCompletion(alone[i], revOut[len(reqs)-1-i]) {
			t.Fatalf("request %d: alone %v %v, in batch %v %v", i, alone[i].Tokens, alone[i].LogProbs, batch[i].Tokens, batch[i].LogProbs)
		}
		if packs && !sameCompletion(alone[i], fast[i]) {
			t.Fatalf("request %d: default mode on packed weights %v %v, exact %v %v", i, fast[i].Tokens, fast[i].LogProbs, alone[i].Tokens, alone[i].LogProbs)
		}
		if !slices.Equal(alone[i].Tokens, fast[i].Tokens) || alone[i].Finish != fast[i].Finish {
			t.Fatalf("request %d: default mode sampled %v, exact %v", i, fast[i].Tokens, alone[i].Tokens)
		}
		for j, lp := range fast[i].LogProbs {
			if math.Abs(float64(lp-alone[i].LogProbs[j])) > 1e-5 {
				t.Fatalf("request %d token %d: default-mode log-prob %v, exact %v", i, j, lp, alone[i].LogProbs[j])
			}
		}
	}
}

// TestPrefixReuseIsExact: reusing cached prefixes (identical prompts,
// shared system prompt, the next turn of an episode) gives exactly the
// tokens and log-probabilities of sampling the same batch without any
// reuse, and really skips the shared tokens. With 30 sequences decoding
// at once the default mode without packed weights decodes through the
// many-row GEMM kernel, so only prompt rows are reused; in Exact mode, or
// on packed weights, whole turns are.
func TestPrefixReuseIsExact(t *testing.T) {
	for _, name := range []string{"tiny", "unpacked"} {
		for _, exact := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/exact=%v", name, exact), func(t *testing.T) { testPrefixReuse(t, sampleModels(t)[name], exact) })
		}
	}
}

func testPrefixReuse(t *testing.T, m *Model, exact bool) {
	rng := rand.New(rand.NewPCG(4, 4))
	system := randPrompt(rng, 20, m.d.V)
	var turn1 []Request
	for i := 0; i < 3; i++ {
		p := append(slices.Clone(system), randPrompt(rng, 3+i, m.d.V)...)
		for g := 0; g < 10; g++ {
			turn1 = append(turn1, Request{Key: fmt.Sprintf("p%d#%d", i, g), Prompt: p, MaxNewTokens: 8, Temperature: 1, Seed: 7})
		}
	}
	reuse := NewSampler(m, SamplerOptions{Exact: exact})
	got1 := generate(t, reuse, turn1...)
	st := reuse.Stats()
	if st.ReusedTokens < st.PromptTokens*9/10 {
		t.Errorf("turn 1 reused %d of %d prompt tokens", st.ReusedTokens, st.PromptTokens)
	}
	var turn2 []Request
	for i, c := range got1 {
		r := turn1[i]
		r.Prompt = append(append(slices.Clone(r.Prompt), c.Tokens...), randPrompt(rng, 2, m.d.V)...)
		r.Key += "/turn2"
		turn2 = append(turn2, r)
	}
	before := reuse.Stats()
	got2 := generate(t, reuse, turn2...)
	after := reuse.Stats()
	computed := after.PrefillTokens - before.PrefillTokens
	limit := int64(len(turn2)) * 3 // the new tokens only
	if _, packs := m.be.(kernels.PackedNT); !exact && !packs {
		limit = int64(len(turn2)) * (8 + 3) // the completion too
	}
	if computed > limit {
		t.Errorf("turn 2 computed %d prompt tokens, want ≤ %d", computed, limit)
	}
	fresh := NewSampler(m, SamplerOptions{PrefixCacheBytes: -1, Exact: exact})
	want1, want2 := generate(t, fresh, turn1...), generate(t, fresh, turn2...)
	for i, r := range append(turn1, turn2...) {
		want := append(want1, want2...)[i]
		got := append(got1, got2...)[i]
		if !sameCompletion(got, want) {
			t.Fatalf("request %s: with reuse %v %v, without %v %v", r.Key, got.Tokens, got.LogProbs, want.Tokens, want.LogProbs)
		}
	}
	// A weight update invalidates the cache.
	tr, _ := NewTrainer(m, DefaultTrainConfig())
	if _, err := tr.Step([][]Sequence{fixedBatch(m.d.V)}); err != nil {
		t.Fatal(err)
	}
	got3 := generate(t, reuse, turn2...)
	want3 := generate(t, NewSampler(m, SamplerOptions{PrefixCacheBytes: -1, Exact: exact}), turn2...)
	for i := range got3 {
		if !sameCompletion(got3[i], want3[i]) {
			t.Fatal("sampling after a weight update used stale cached KV")
		}
	}
}

// TestReleaseCachesFreesWhatTheSamplerKeeps: after ReleaseCaches the
// sampler holds no prefix-cache entry and no pooled cache, samples exactly
// what a fresh sampler does (prefilling what it had cached), and refuses
// while a stream is open.
func TestReleaseCachesFreesWhatTheSamplerKeeps(t *testing.T) {
	m := sampleModel(t)
	rng := rand.New(rand.NewPCG(6, 6))
	var reqs []Request
	for i := range 12 {
		reqs = append(reqs, Request{Key: fmt.Sprintf("r%d", i), Prompt: randPrompt(rng, 10+i, m.d.V), MaxNewTokens: 6, Temperature: 1, Seed: 3})
	}
	s := NewSampler(m, SamplerOptions{})
	generate(t, s, reqs...)
	if s.Stats().CachedPrefixes == 0 || s.cache.used == 0 {
		t.Fatal("the sampler cached no prefix: nothing to release")
	}
	if err := s.ReleaseCaches(); err != nil {
		t.Fatal(err)
	}
	if s.Stats().CachedPrefixes != 0 || s.cache.used != 0 || s.pool.bytes != 0 || len(s.pool.free) != 0 {
		t.Fatalf("after release: %d entries, %d cached bytes, %d pooled bytes", s.Stats().CachedPrefixes, s.cache.used, s.pool.bytes)
	}
	before := s.Stats()
	got := generate(t, s, reqs...)
	if after := s.Stats(); after.ReusedTokens != before.ReusedTokens {
		t.Fatalf("reused %d prompt tokens after the release", after.ReusedTokens-before.ReusedTokens)
	}
	want := generate(t, NewSampler(m, SamplerOptions{}), reqs...)
	for i := range want {
		if !sameCompletion(got[i], want[i]) {
			t.Fatalf("request %d after a release: %v, a fresh sampler %v", i, got[i].Tokens, want[i].Tokens)
		}
	}
	st, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseCaches(); err == nil || !strings.Contains(err.Error(), "stream is open") {
		t.Fatalf("release with a stream open: %v", err)
	}
	st.Close()
	if err := s.ReleaseCaches(); err != nil {
		t.Fatal(err)
	}
}

// TestSamplingDistribution draws n first tokens (one prefill thanks to
// prefix reuse) and compares their counts with softmax(logits/T): each
// token's count within 4.5 binomial standard deviations of n·p, and
// Pearson's χ² over all tokens below its 0.999 quantile. The same counts
// must fail the χ² bound for T·0.9 and T·1.1, so the test can tell a
// temperature applied wrongly (a 10 % error) from sampling noise. With
// top-p only the nucleus may appear.
func TestSamplingDistribution(t *testing.T) {
	m := sampleModel(t)
	s := NewSampler(m, SamplerOptions{})
	prompt := []int32{3, 1, 4, 1, 5}
	full, _ := m.Logits(prompt)
	row := full[(len(prompt)-1)*m.d.V:]
	const temp, n = 1.5, 8000
	probs := func(temp float64) []float64 {
		p := make([]float64, m.d.V)
		var z float64
		for i, v := range row {
			p[i] = math.Exp(float64(v) / temp)
			z += p[i]
		}
		for i := range p {
			p[i] /= z
		}
		return p
	}
	p := probs(temp)
	var reqs []Request
	for i := 0; i < n; i++ {
		reqs = append(reqs, Request{Key: fmt.Sprint(i), Prompt: prompt, MaxNewTokens: 1, Temperature: temp, Seed: 1})
	}
	count := make([]float64, m.d.V)
	for _, c := range generate(t, s, reqs...) {
		count[c.Tokens[0]]++
		if lp := logSoftmax(row, c.Tokens[0]); math.Abs(lp-float64(c.LogProbs[0])) > 1e-4 {
			t.Fatalf("log-prob %v, want %v (before temperature)", c.LogProbs[0], lp)
		}
	}
	for i := range p {
		if e, sd := n*p[i], math.Sqrt(n*p[i]*(1-p[i])); math.Abs(count[i]-e) > 4.5*sd {
			t.Errorf("token %d: count %.0f, expected %.1f ± %.1f (binomial sd)", i, count[i], e, sd)
		}
	}
	limit := distuv.ChiSquared{K: float64(m.d.V - 1)}.Quantile(0.999)
	if x := chiSquare(count, p); x > limit {
		t.Errorf("χ² %.1f over %d tokens > %.1f (0.999 quantile): counts do not follow softmax(logits/%.1f)", x, m.d.V, limit, temp)
	}
	for _, wrong := range []float64{0.9 * temp, 1.1 * temp} {
		if x := chiSquare(count, probs(wrong)); x <= limit {
			t.Errorf("the counts also pass for T = %.2f (χ² %.1f ≤ %.1f): the test cannot see a 10 %% temperature error", wrong, x, limit)
		}
	}
	order := make([]int, m.d.V)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(math.Copysign(1, p[b]-p[a])) })
	var c float64
	nucleus := map[int32]bool{}
	for _, i := range order {
		nucleus[int32(i)] = true
		if c += p[i]; c >= 0.5 {
			break
		}
	}
	for i := range reqs {
		reqs[i].TopP = 0.5
	}
	for _, c := range generate(t, s, reqs...) {
		if !nucleus[c.Tokens[0]] {
			t.Fatalf("top-p 0.5 sampled token %d outside the nucleus %v", c.Tokens[0], nucleus)
		}
	}
}

// TestBF16Sampling: greedy decoding on bf16 weights follows the float32
// model's log-probabilities closely (bf16 keeps 8 bits of mantissa:
// relative weight error ≤ 2^-9, so logits move by ~1e-2 here).
func TestBF16Sampling(t *testing.T) {
	m := sampleModel(t)
	prompt := []int32{2, 7, 1, 8}
	bf := generate(t, NewSampler(m, SamplerOptions{BF16: true}), Request{Prompt: prompt, MaxNewTokens: 6})[0]
	seq := append(slices.Clone(prompt), bf.Tokens...)
	full, _ := m.Logits(seq[:len(seq)-1])
	for i, tok := range bf.Tokens {
		row := full[(len(prompt)-1+i)*m.d.V : (len(prompt)+i)*m.d.V]
		if lp := logSoftmax(row, tok); math.Abs(lp-float64(bf.LogProbs[i])) > 0.1 {
			t.Fatalf("token %d: bf16 log-prob %v, float32 %v", i, bf.LogProbs[i], lp)
		}
	}
}

// TestSamplingIndependentOfBatchMedium repeats the batch-independence check
// on models whose decode batch crosses the GEMM's kernel switch: medium,
// whose packed q, k, v (gate, up) are packed apart, and wide, where they
// are views of the fused matrices; in the default mode (exact on packed
// weights), in Exact mode, and on bf16 weights.
func TestSamplingIndependentOfBatchMedium(t *testing.T) {
	ms := sampleModels(t)
	for _, name := range []string{"medium", "wide"} {
		m := ms[name]
		if views := m.d.splitAtPanels(); views != (name == "wide") {
			t.Fatalf("%s model: packed weights split at panel edges %v", name, views)
		}
		for _, bf := range []bool{false, true} {
			reqs := mixedRequests(m.d.V)
			s := NewSampler(m, SamplerOptions{BF16: bf})
			batch := generate(t, s, reqs...)
			if s.pk == nil {
				t.Fatalf("%s model: want packed weights", name)
			}
			exact := generate(t, NewSampler(m, SamplerOptions{Exact: true, BF16: bf}), reqs...)
			for i, r := range reqs {
				if !sameCompletion(exact[i], batch[i]) {
					t.Fatalf("%s bf16 %v, request %d: Exact %v, default %v", name, bf, i, exact[i].LogProbs, batch[i].LogProbs)
				}
				if alone := generate(t, NewSampler(m, SamplerOptions{PrefixCacheBytes: -1, BF16: bf}), r)[0]; !sameCompletion(alone, batch[i]) {
					t.Fatalf("%s bf16 %v, request %d: alone %v, in batch %v", name, bf, i, alone.LogProbs, batch[i].LogProbs)
				}
			}
		}
	}
}

// TestPrefixCacheEvictsLRU: under a budget of two entries the least
// recently used is evicted, an entry is replaced by its own continuation,
// and reuse of what remains stays exact.
func TestPrefixCacheEvictsLRU(t *testing.T) {
	m := sampleModel(t)
	req := func(p []int32) Request {
		return Request{Key: "k", Prompt: p, MaxNewTokens: 4, Temperature: 1, Seed: 3}
	}
	a, b, c := []int32{1, 2, 3, 4, 5, 6}, []int32{2, 2, 3, 4, 5, 6}, []int32{3, 2, 3, 4, 5, 6}
	// Entries of up to kvGranule positions each take one granule's cache.
	s := NewSampler(m, SamplerOptions{PrefixCacheBytes: int64(2*m.kvLen(kvGranule)*4 + 1)})
	turn := func(p []int32, c Completion) []int32 { return append(append(slices.Clone(p), c.Tokens...), 7) }
	ca := generate(t, s, req(a))[0]
	generate(t, s, req(b))
	a2 := turn(a, ca)
	ca2 := generate(t, s, req(a2))[0] // replaces a's entry by its continuation
	generate(t, s, req(c))            // evicts b's, the least recently used
	if n := s.Stats().CachedPrefixes; n != 2 {
		t.Fatalf("%d cached prefixes under a budget of 2", n)
	}
	for _, e := range s.cache.entries {
		if e.tokens[0] == 2 {
			t.Fatal("the least recently used entry survived")
		}
	}
	a3 := turn(a2, ca2)
	before := s.Stats().PrefillTokens
	got := generate(t, s, req(a3))[0]
	if d := s.Stats().PrefillTokens - before; d > 2 {
		t.Fatalf("the third turn computed %d prompt tokens, want ≤ 2", d)
	}
	if want := generate(t, NewSampler(m, SamplerOptions{PrefixCacheBytes: -1}), req(a3))[0]; !sameCompletion(got, want) {
		t.Fatal("reuse after eviction changed the completion")
	}
}

// TestTrainThenSample: after a tiny model memorises completions (loss on
// completion tokens only), greedy sampling from each prompt reproduces its
// completion and stops at the stop token, and the log-probabilities are
// near 0.
func TestTrainThenSample(t *testing.T) {
	m := tinyModel(t, kernels.NewCPU(), 1)
	cfg := DefaultTrainConfig()
	cfg.Schedule, cfg.WeightDecay = ConstantLR(1e-2), 0
	tr, _ := NewTrainer(m, cfg)
	const stop = 18
	prompts := [][]int32{{1, 2, 3}, {4, 5, 6, 7}}
	completions := [][]int32{{9, 8, 7, 6, stop}, {10, 11, 12, stop}}
	var batch []Sequence
	for i, p := range prompts {
		q := Sequence{Tokens: append(slices.Clone(p), completions[i]...)}
		q.Mask = make([]float32, len(q.Tokens))
		for j := len(p); j < len(q.Tokens); j++ {
			q.Mask[j] = 1
		}
		batch = append(batch, q)
	}
	for i := 0; i < 300; i++ {
		st, err := tr.Step([][]Sequence{batch})
		if err != nil {
			t.Fatal(err)
		}
		if st.Loss < 0.01 {
			break
		}
	}
	s := NewSampler(m, SamplerOptions{})
	for i, p := range prompts {
		c := generate(t, s, Request{Key: fmt.Sprint(i), Prompt: p, MaxNewTokens: 10, Stop: []int32{stop}})[0]
		if !slices.Equal(c.Tokens, completions[i]) || c.Finish != policy.FinishStop {
			t.Fatalf("prompt %d: sampled %v (%s), want %v", i, c.Tokens, c.Finish, completions[i])
		}
		for _, lp := range c.LogProbs {
			if lp < -0.1 {
				t.Fatalf("prompt %d: log-prob %v of a memorised token", i, lp)
			}
		}
	}
}

// chiSquare is Pearson's statistic Σ (O−E)²/E of counts against
// probabilities p.
func chiSquare(count, p []float64) float64 {
	var n, x float64
	for _, c := range count {
		n += c
	}
	for i, c := range count {
		e := n * p[i]
		x += (c - e) * (c - e) / e
	}
	return x
}

// TestWarmDecodingFromLargeModels: decoding keeps the kernel helpers warm
// for the 110M and Qwen3-0.6B shapes and not for the small ones (the
// embedded model's bench-small shape and tiny), whose gaps between
// forward passes are harness code.
func TestWarmDecodingFromLargeModels(t *testing.T) {
	for name, want := range map[string]bool{"tiny": false, "bench-small": false, "110m": true, "qwen3-0.6b": true} {
		cfg, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		n := paramCount(paramLayout(cfg))
		if got := n >= warmParams; got != want {
			t.Errorf("%s (%d parameters): warm %v, want %v", name, n, got, want)
		}
	}
	if NewSampler(tinyModel(t, kernels.NewCPU(), 1), SamplerOptions{}).warm {
		t.Error("a tiny model's sampler holds warm sections")
	}
}
