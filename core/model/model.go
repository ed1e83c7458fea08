package model

import (
	"errors"
	"fmt"
	"math"

	"whale/kernels"
)

// dims are the sizes the layers use, derived once from the Config.
type dims struct {
	C, F, V, L int // hidden, intermediate, vocabulary, layers
	H, KVH, hd int // query heads, key/value heads, head dimension
	Hq, Hk     int // H·hd, KVH·hd
	maxPos     int
}

func dimsOf(c Config) dims {
	hd := c.Dim()
	return dims{C: c.HiddenSize, F: c.IntermediateSize, V: c.VocabSize, L: c.NumHiddenLayers,
		H: c.NumAttentionHeads, KVH: c.NumKeyValueHeads, hd: hd,
		Hq: c.NumAttentionHeads * hd, Hk: c.NumKeyValueHeads * hd, maxPos: c.MaxPositionEmbeddings}
}

// Model is a decoder-only transformer whose parameters live in one backend
// allocation. A Model is not safe for concurrent use.
type Model struct {
	Config Config
	be     kernels.Backend
	d      dims
	params []ParamInfo
	index  map[string]int
	arena  kernels.Tensor // every parameter (zero under a bfloat16 base)
	w      weights        // views into arena (bindFloat)
	// frozen holds the frozen weights in bfloat16 when FreezeBF16 made
	// them so (nil otherwise).
	frozen   *bf16Base
	grad     kernels.Tensor // every gradient, allocated on first training use
	gw       weights        // views into grad
	act      *acts          // training activations for the last (B, T)
	actArena kernels.Tensor // backs act; re-allocated only when it must grow
	// version counts parameter changes, so samplers drop caches (bf16
	// copies, prefix KV) computed from older weights.
	version uint64
	// baseVersion counts changes of the arena alone (not the adapters'),
	// so samplers re-pack their copies of it only when it changed.
	baseVersion uint64
	// lora holds the adapters when LoRA is enabled (the arena is then
	// frozen, and grad and gw hold the adapters' gradients only).
	lora *loraState
}

// New builds a model of cfg on backend be with seeded initial parameters:
// normal(0, 0.02) matrices and embeddings, o_proj and down_proj scaled by
// 1/sqrt(2·layers), norms 1, biases 0.
func New(cfg Config, be kernels.Backend, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Model{Config: cfg, be: be, d: dimsOf(cfg), params: paramLayout(cfg), index: map[string]int{}}
	for i, p := range m.params {
		m.index[p.Name] = i
	}
	m.arena = be.Alloc(arenaLen(m.params))
	be.Load(m.arena, initParams(cfg, m.params, seed))
	m.w = bind(cfg, m.params, m.arena)
	return m, nil
}

// Backend returns the backend the model runs on.
func (m *Model) Backend() kernels.Backend { return m.be }

// Params lists every parameter tensor (HF name, HF shape, arena location)
// in arena order.
func (m *Model) Params() []ParamInfo {
	out := make([]ParamInfo, len(m.params))
	for i, p := range m.params {
		p.Shape = append([]int(nil), p.Shape...)
		out[i] = p
	}
	return out
}

// Version changes whenever the parameters change.
func (m *Model) Version() uint64 { return m.version }

// ErrUnknownParam is returned for a parameter name the model does not have.
var ErrUnknownParam = errors.New("model: unknown parameter")

func (m *Model) param(name string) (ParamInfo, error) {
	i, ok := m.index[name]
	if !ok {
		return ParamInfo{}, fmt.Errorf("%w %q", ErrUnknownParam, name)
	}
	return m.params[i], nil
}

// ReadParam returns a copy of the values of the named parameter.
func (m *Model) ReadParam(name string) ([]float32, error) {
	p, err := m.param(name)
	if err != nil {
		return nil, err
	}
	v := make([]float32, p.Len)
	m.readParam(v, p)
	return v, nil
}

// WriteParam sets the values of the named parameter (row-major, HF shape).
func (m *Model) WriteParam(name string, v []float32) error {
	p, err := m.param(name)
	if err != nil {
		return err
	}
	if len(v) != p.Len {
		return fmt.Errorf("model: write %s: %d values for shape %v (%d)", name, len(v), p.Shape, p.Len)
	}
	if err := m.writable(); err != nil {
		return err
	}
	m.be.Load(m.arena.View(p.Offset, p.Len), v)
	m.version++
	m.baseVersion++
	return nil
}

// ParamValues returns a copy of the whole parameter arena (see Params for
// the layout); under a bfloat16 base, its values widened.
func (m *Model) ParamValues() []float32 {
	if m.frozen != nil {
		return m.frozenValues()
	}
	v := make([]float32, m.arena.Len())
	m.be.Store(v, m.arena)
	return v
}

// SetParamValues overwrites the whole parameter arena.
func (m *Model) SetParamValues(v []float32) error {
	if err := m.writable(); err != nil {
		return err
	}
	if len(v) != m.arena.Len() {
		return fmt.Errorf("model: set parameters: %d values for an arena of %d", len(v), m.arena.Len())
	}
	m.be.Load(m.arena, v)
	m.version++
	m.baseVersion++
	return nil
}

// writable refuses writes to frozen weights.
func (m *Model) writable() error {
	if m.lora != nil {
		return errors.New("model: the weights are frozen under LoRA (set the adapters with SetTrainableValues)")
	}
	return nil
}

// acts are the training activations for B sequences of T positions, in one
// backend allocation. Layers [0, keep) hold their own activations; the
// others share one set, which the forward pass overwrites layer by layer
// (so it ends holding the last layer's) and the backward pass refills for
// layers keep … L−2 by running each one's forward again from its input
// (recomputeLayer). keep = L−1 therefore recomputes nothing; a
// forward-only pass (grad false) uses keep = 0 and has no gradients.
// With ownH (keep = L−1 only) every layer keeps its h = silu(g)·u too,
// which the MLP's backward then need not compute again.
type acts struct {
	B, T   int
	keep   int
	grad   bool
	ownH   bool
	res    []kernels.Tensor // L+1 residual streams (N,C)
	layers []layerActs
	lnf    kernels.Tensor // (N,C)
	rstdf  kernels.Tensor // (N)
	hc     int            // rows per chunk of the output head
	logits kernels.Tensor // (hc,V) one chunk of logits; dlogits after the loss
	losses kernels.Tensor // (N)
	dres   kernels.Tensor // (N,C) residual-stream gradient
	s      gradScratch
	// br lays out the batch's rows when they hold prompts shared by
	// several sequences (packTrain); nil: a sequence a row.
	br *kernels.Branches
}

// layoutActs carves the activations for (B, T) keeping keep layers' own,
// with the gradients' scratch when grad is set and every layer's h when
// ownH is (see acts), with take, which hands out consecutive pieces of
// one allocation.
func (m *Model) layoutActs(B, T, keep int, grad, ownH bool, take func(n int) kernels.Tensor) *acts {
	d, N := m.d, B*T
	a := &acts{B: B, T: T, keep: keep, grad: grad, ownH: ownH}
	for l := 0; l <= d.L; l++ {
		a.res = append(a.res, take(N*d.C))
	}
	// The backward pass needs neither the normed q, k (RoPE's backward
	// reads only its gradient) nor h = silu(g)·u (mlpBackward recomputes
	// it from g and u, unless ownH): every layer shares one of each.
	h := take(N * d.F)
	var qn, kn kernels.Tensor
	if m.Config.QKNorm() {
		qn, kn = take(N*d.Hq), take(N*d.Hk)
	}
	for l := 0; l < d.L; l++ {
		if l > keep {
			a.layers = append(a.layers, a.layers[keep])
			continue
		}
		la := layerActs{ln1: take(N * d.C), rstd1: take(N), q: take(N * d.Hq), k: take(N * d.Hk), v: take(N * d.Hk),
			qr: take(N * d.Hq), kr: take(N * d.Hk), att: take(N * d.Hq), lse: take(B * d.H * T), x2: take(N * d.C),
			ln2: take(N * d.C), rstd2: take(N), g: take(N * d.F), u: take(N * d.F), h: h}
		if ownH && l > 0 {
			la.h = take(N * d.F)
		}
		la.hKept = ownH
		la.qn, la.kn = la.q, la.k
		if m.Config.QKNorm() {
			la.qn, la.kn, la.qrstd, la.krstd = qn, kn, take(N*d.H), take(N*d.KVH)
		}
		m.takeLoRAActs(&la, N, take)
		a.layers = append(a.layers, la)
	}
	a.hc = headChunk(N, d.V, m.logitsBudget())
	a.lnf, a.rstdf, a.logits, a.losses = take(N*d.C), take(N), take(a.hc*d.V), take(N)
	if !grad {
		return a
	}
	a.dres = take(N * d.C)
	a.s.dln = take(N * d.C)
	// A layer's MLP backward and its attention backward run one after the
	// other and pass each other nothing but dres: their scratch shares
	// one region.
	region := take(N * max(3*d.F, 4*d.Hq+4*d.Hk))
	off := 0
	view := func(n int) kernels.Tensor { t := region.View(off, n); off += n; return t }
	a.s.dh, a.s.dg, a.s.du = view(N*d.F), view(N*d.F), view(N*d.F)
	off = 0
	a.s.datt, a.s.dqr, a.s.dqn, a.s.dq = view(N*d.Hq), view(N*d.Hq), view(N*d.Hq), view(N*d.Hq)
	a.s.dkr, a.s.dkn, a.s.dk, a.s.dv = view(N*d.Hk), view(N*d.Hk), view(N*d.Hk), view(N*d.Hk)
	if m.lora != nil {
		a.s.dlu = take(N * m.lora.cfg.Rank)
	}
	return a
}

// actsLen is the length in floats of the activations for (B, T, keep,
// grad).
func (m *Model) actsLen(B, T, keep int, grad bool) int { return m.actsLenH(B, T, keep, grad, false) }

// actsLenH is actsLen with every layer's h kept when ownH is set.
func (m *Model) actsLenH(B, T, keep int, grad, ownH bool) int {
	total := 0
	m.layoutActs(B, T, keep, grad, ownH, func(n int) kernels.Tensor { total += n; return kernels.MakeTensor(nil, 0, n) })
	return total
}

// DefaultActivationBytes bounds a training micro-batch's activations when
// TrainConfig.ActivationBytes is 0.
const DefaultActivationBytes = 256 << 20

// keepFor returns the acts.keep of a (B, T) training pass within budget
// bytes (4 per float): L−1 (nothing recomputed) when every layer's
// activations fit or budget < 0, else the largest that fits, at least 0
// (a micro-batch over the budget even then still runs).
func (m *Model) keepFor(B, T int, budget int64) int {
	if budget == 0 {
		budget = DefaultActivationBytes
	}
	all := m.d.L - 1
	if budget < 0 {
		return all
	}
	budget += m.headExtraBytes(B * T)
	// Each kept layer adds one layer's set to the layout of keep 0.
	base := 4 * int64(m.actsLen(B, T, 0, true))
	if all == 0 || base >= budget {
		return 0
	}
	layer := 4*int64(m.actsLen(B, T, 1, true)) - base
	return int(min(int64(all), (budget-base)/layer))
}

// ownHFor says whether a (B, T) training pass keeping every layer (keep
// = L−1) also keeps every layer's h within budget bytes: an MLP backward
// then saves computing h again, but never at the cost of a layer kept.
func (m *Model) ownHFor(B, T, keep int, budget int64) bool {
	if budget == 0 {
		budget = DefaultActivationBytes
	}
	if keep != m.d.L-1 {
		return false
	}
	return budget < 0 || 4*int64(m.actsLenH(B, T, keep, true, true)) <= budget+m.headExtraBytes(B*T)
}

// headExtraBytes is what a backend's larger logits budget
// (kernels.LogitsBudgeter) adds to the head chunk of N rows over the
// default's: memory the backend chose to spend, not charged to the
// activation budget, so that a GPU's one large head chunk does not make
// the step recompute layers it would otherwise keep.
func (m *Model) headExtraBytes(N int) int64 {
	V := m.d.V
	return 4 * int64(V) * int64(max(0, headChunk(N, V, m.logitsBudget())-headChunk(N, V, headLogits)))
}

// ensureActs returns activations laid out exactly for (B, T, keep,
// grad, ownH), carved from one backend allocation that is re-made only
// when it must grow (ReleaseActivations drops it).
func (m *Model) ensureActs(B, T, keep int, grad, ownH bool) *acts {
	if a := m.act; a != nil && a.B == B && a.T == T && a.keep == keep && a.grad == grad && a.ownH == ownH {
		return a
	}
	total := m.actsLenH(B, T, keep, grad, ownH)
	if m.actArena.Len() < total {
		m.act = nil
		if !m.actArena.IsZero() {
			m.be.Free(m.actArena)
		}
		m.actArena = m.be.Alloc(total)
	}
	off := 0
	m.act = m.layoutActs(B, T, keep, grad, ownH, func(n int) kernels.Tensor { t := m.actArena.View(off, n); off += n; return t })
	return m.act
}

// ActivationBytes is the size of the training activations the model holds
// (4 bytes a float; 0 after ReleaseActivations).
func (m *Model) ActivationBytes() int64 { return 4 * int64(m.actArena.Len()) }

// ReleaseActivations frees the training activations, which otherwise stay
// allocated for the next pass of the same or a smaller shape: a caller
// that samples between training steps calls it so that the activations'
// memory and the sampler's KV caches are not held at once.
func (m *Model) ReleaseActivations() {
	m.act = nil
	if !m.actArena.IsZero() {
		m.be.Free(m.actArena)
	}
	m.actArena = kernels.Tensor{}
}

// ensureGrads allocates the gradients of what trains: every parameter,
// or under LoRA the adapters alone (gw's other views stay zero, which
// the backward pass reads as frozen).
func (m *Model) ensureGrads() {
	if !m.grad.IsZero() {
		return
	}
	if m.lora == nil {
		m.grad = m.be.Alloc(m.arena.Len())
		m.gw = bind(m.Config, m.params, m.grad)
		return
	}
	m.grad = m.be.Alloc(m.lora.arena.Len())
	m.gw = weights{layers: make([]layerWeights, m.d.L)}
	m.lora.bindAdapters(&m.gw, m.grad)
}

// headChunk is how many rows of logits the output head materialises at
// once: all N when small, else enough for budget logits, so a 32k
// vocabulary does not need N·V floats.
func headChunk(N, V, budget int) int { return max(1, min(N, budget/V)) }

// headLogits is the default logits budget of headChunk, about 8M logits
// (32 MB) (a variable so tests can force several chunks).
var headLogits = 8 << 20

// logitsBudget is the backend's logits budget (kernels.LogitsBudgeter)
// where it gives one, else headLogits: the CPU backend keeps the default.
func (m *Model) logitsBudget() int {
	if lb, ok := m.be.(kernels.LogitsBudgeter); ok {
		if n := lb.LogitsBudget(); n > 0 {
			return n
		}
	}
	return headLogits
}

// trunk: tokens (B,T) at positions pos -> final normed hidden states
// a.lnf (B,T,C).
func (m *Model) trunk(a *acts, tokens, pos []int32, B, T int) {
	d, N := m.d, B*T
	m.embed(a.res[0], tokens)
	m.layers(m.trainPass(a, pos, B, T))
	m.be.RMSNorm(a.lnf, a.rstdf, a.res[d.L], m.w.norm, N, d.C, m.Config.RMSNormEps)
}

// head: lnf rows [r0, r0+n) -> logits (n,V) in a.logits.
func (m *Model) head(a *acts, r0, n int) kernels.Tensor {
	d := m.d
	lg := a.logits.View(0, n*d.V)
	m.linear(lg, a.lnf.View(r0*d.C, n*d.C), m.w.lmHead, m.frozenHead(), kernels.Tensor{}, n, d.C, d.V, false)
	return lg
}

// headBackward: dlogits (n,V) of rows [r0, r0+n) -> s.dln rows (n,C) and
// the head's weight gradient.
func (m *Model) headBackward(a *acts, dl kernels.Tensor, r0, n int) {
	d := m.d
	m.inputGrad(a.s.dln.View(r0*d.C, n*d.C), dl, m.w.lmHead, m.frozenHead(), n, d.V, d.C, false)
	weightGrad(m.be, m.gw.lmHead, dl, a.lnf.View(r0*d.C, n*d.C), d.V, n, d.C)
}

// backward: from s.dln (B,T,C) = ∂L/∂lnf, adds every parameter's gradient
// into m.gw.
func (m *Model) backward(a *acts, tokens, pos []int32, B, T int) {
	d, be, N, s := m.d, m.be, B*T, &a.s
	be.Fill(a.dres, 0)
	be.RMSNormBackward(a.dres, m.gw.norm, s.dln, a.res[d.L], m.w.norm, a.rstdf, N, d.C)
	for l := d.L - 1; l >= 0; l-- {
		la := a.layers[l]
		if l >= a.keep && l < d.L-1 { // the shared set still holds layer L-1
			m.recomputeLayer(a, &la, l, pos)
		}
		m.mlpBackward(&la, &m.w.layers[l], m.frozenLayer(l), &m.gw.layers[l], s, N, a.dres)
		m.attnBackward(&la, &m.w.layers[l], m.frozenLayer(l), &m.gw.layers[l], s, a.res[l], pos, a.br, B, T, a.dres)
	}
	if !m.gw.embed.IsZero() {
		be.EmbeddingBackward(m.gw.embed, a.dres, tokens, d.C)
	}
}

// recomputeLayer refills the shared activations la with layer l's, running
// its forward pass again from the stored input a.res[l]: the same kernels
// on the same inputs and weights give the forward's bits. The MLP's output
// projection is skipped (its result is in a.res[l+1] already; its weight
// gradient needs only h, and a LoRA adapter on it only its x·Aᵀ term).
func (m *Model) recomputeLayer(a *acts, la *layerActs, l int, pos []int32) {
	m.layer(m.trainPass(a, pos, a.B, a.T), l, la, a.res[l], la.x2, kernels.Tensor{})
}

// Sequence is one training or evaluation example. Mask[t] weighs the loss
// of predicting Tokens[t] from Tokens[:t] (Mask[0] is unused): 1 on
// completion tokens, 0 on prompt, user and tool tokens.
type Sequence struct {
	Tokens []int32
	Mask   []float32
}

// packed is a batch of sequences right-padded to a (B, T) layout: inputs
// are Tokens[:n-1], targets Tokens[1:]; padding rows have weight 0 and, as
// attention is causal and padding comes last, never influence a real row.
type packed struct {
	B, T            int
	tokens, targets []int32
	pos             []int32
	weight          []float32         // mask · scale per row
	rowLoss         []float64         // per-row weighted loss, set by lossGrad
	br              *kernels.Branches // shared prompts (packTrain); nil: a sequence a row
}

// maskSum returns Σ Mask[1:] over seqs after validating them.
func (m *Model) maskSum(seqs []Sequence) (float64, error) { return m.checkSeqs(seqs, false) }

// checkSeqs validates seqs and returns Σ Mask[1:]; signed allows negative
// weights (policy-gradient objectives).
func (m *Model) checkSeqs(seqs []Sequence, signed bool) (float64, error) {
	var s float64
	for i, q := range seqs {
		if len(q.Mask) != len(q.Tokens) {
			return 0, fmt.Errorf("model: sequence %d: %d mask values for %d tokens", i, len(q.Mask), len(q.Tokens))
		}
		if len(q.Tokens)-1 > m.d.maxPos {
			return 0, fmt.Errorf("model: sequence %d: %d tokens exceed max_position_embeddings %d + 1", i, len(q.Tokens), m.d.maxPos)
		}
		for t, tok := range q.Tokens {
			if tok < 0 || int(tok) >= m.d.V {
				return 0, fmt.Errorf("model: sequence %d token %d: id %d outside vocabulary of %d", i, t, tok, m.d.V)
			}
		}
		for t, w := range q.Mask {
			if w != w || math.IsInf(float64(w), 0) || (w < 0 && !signed) {
				return 0, fmt.Errorf("model: sequence %d mask %d: weight %v must be finite and ≥ 0", i, t, w)
			}
			if t > 0 {
				s += float64(w)
			}
		}
	}
	return s, nil
}

func (m *Model) pack(seqs []Sequence, scale float64) *packed {
	p := &packed{B: len(seqs), T: rowLen(seqs)}
	N := p.B * p.T
	p.tokens, p.targets, p.pos, p.weight = make([]int32, N), make([]int32, N), make([]int32, N), make([]float32, N)
	for b, q := range seqs {
		for t := 0; t < p.T; t++ {
			r := b*p.T + t
			p.pos[r] = int32(t)
			if t+1 < len(q.Tokens) {
				p.tokens[r], p.targets[r] = q.Tokens[t], q.Tokens[t+1]
				p.weight[r] = float32(float64(q.Mask[t+1]) * scale)
			}
		}
	}
	return p
}

// rowLen is pack's row length for seqs: the longest sequence's inputs
// (at least 1).
func rowLen(seqs []Sequence) int {
	T := 1
	for _, q := range seqs {
		T = max(T, len(q.Tokens)-1)
	}
	return T
}

// lossGrad runs the forward pass and the loss on a packed batch and, when
// grad is set, the backward pass (adding into m.gw) with activations
// within budget bytes (see keepFor). It returns Σ of the weighted
// per-token losses.
func (m *Model) lossGrad(p *packed, grad bool, budget int64) float64 {
	keep, ownH := 0, false
	if grad {
		keep = m.keepFor(p.B, p.T, budget)
		ownH = m.ownHFor(p.B, p.T, keep, budget)
	}
	a := m.ensureActs(p.B, p.T, keep, grad, ownH)
	a.br = p.br
	N, V := p.B*p.T, m.d.V
	m.trunk(a, p.tokens, p.pos, p.B, p.T)
	if grad {
		m.ensureGrads()
	}
	for r0 := 0; r0 < N; r0 += a.hc {
		n := min(a.hc, N-r0)
		lg := m.head(a, r0, n)
		dl := kernels.Tensor{}
		if grad {
			dl = lg
		}
		m.be.CrossEntropy(a.losses.View(r0, n), dl, lg, p.targets[r0:r0+n], p.weight[r0:r0+n], n, V)
		if grad {
			m.headBackward(a, dl, r0, n)
		}
	}
	l := make([]float64, N)
	m.be.Store64(l, a.losses)
	p.rowLoss = l
	var s float64
	for _, v := range l {
		s += v
	}
	if grad {
		m.backward(a, p.tokens, p.pos, p.B, p.T)
	}
	return s
}

// SequenceLogProbs returns, for each sequence, Σ_t Mask[t]·log p(Tokens[t]
// | Tokens[:t]) under the model (forward only): with a 0/1 mask, the
// log-probability of the masked tokens, as DPO and importance ratios need.
func (m *Model) SequenceLogProbs(seqs []Sequence) ([]float64, error) {
	if _, err := m.maskSum(seqs); err != nil {
		return nil, err
	}
	out := make([]float64, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	p := m.pack(seqs, 1)
	m.lossGrad(p, false, 0)
	for b := range seqs {
		for t := 0; t < p.T; t++ {
			out[b] -= p.rowLoss[b*p.T+t]
		}
	}
	return out, nil
}

// TokenLogProbs returns, for each sequence, Mask[t]·log p(Tokens[t] |
// Tokens[:t]) at every position t (0 at t = 0 and wherever the mask is 0),
// forward only: the per-token terms SequenceLogProbs sums.
func (m *Model) TokenLogProbs(seqs []Sequence) ([][]float64, error) {
	if _, err := m.maskSum(seqs); err != nil {
		return nil, err
	}
	out := make([][]float64, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	p := m.pack(seqs, 1)
	m.lossGrad(p, false, 0)
	for b, q := range seqs {
		out[b] = make([]float64, len(q.Tokens))
		for t := 0; t+1 < len(q.Tokens); t++ {
			out[b][t+1] = -p.rowLoss[b*p.T+t]
		}
	}
	return out, nil
}

// Loss returns the token-normalised cross-entropy of seqs (Σ mask·loss /
// Σ mask) without touching gradients.
func (m *Model) Loss(seqs []Sequence) (float64, error) {
	total, err := m.maskSum(seqs)
	if err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, fmt.Errorf("model: loss of a batch whose masks are all zero")
	}
	return m.lossGrad(m.pack(seqs, 1/total), false, 0), nil
}

// Logits runs a full forward pass over one sequence and returns its logits
// (len(tokens), V), row t predicting token t+1.
func (m *Model) Logits(tokens []int32) ([]float32, error) {
	mask := make([]float32, len(tokens)+1)
	seq := Sequence{Tokens: append(append([]int32(nil), tokens...), 0), Mask: mask}
	if _, err := m.maskSum([]Sequence{seq}); err != nil {
		return nil, err
	}
	p := m.pack([]Sequence{seq}, 0)
	a := m.ensureActs(1, p.T, 0, false, false)
	m.trunk(a, p.tokens, p.pos, 1, p.T)
	V := m.d.V
	out := make([]float32, len(tokens)*V)
	for r0 := 0; r0 < len(tokens); r0 += a.hc {
		n := min(a.hc, len(tokens)-r0)
		m.be.Store(out[r0*V:(r0+n)*V], m.head(a, r0, n))
	}
	return out, nil
}
