package model

import "whale/kernels"

// The decoder layer, piece by piece, each forward beside its backward.
// Notation: N = rows (B·T tokens), C = hidden size, Hq = heads·hd,
// Hk = kv_heads·hd, F = intermediate size. Backward functions add into
// parameter gradients g and into the residual-stream gradient dres.

// layerActs are one layer's activations, saved by the training forward for
// the backward pass (inference reuses one set as scratch).
type layerActs struct {
	ln1, rstd1   kernels.Tensor // (N,C) (N)
	q, k, v      kernels.Tensor // (N,Hq) (N,Hk) (N,Hk): projections plus bias
	qn, kn       kernels.Tensor // q, k after per-head RMSNorm (the same tensors without qk-norm)
	qrstd, krstd kernels.Tensor // (N·H) (N·KVH)
	qr, kr       kernels.Tensor // qn, kn after RoPE
	att, lse     kernels.Tensor // (N,Hq) attention output; (B·H·T) log-sum-exp (training only)
	x2           kernels.Tensor // (N,C) residual stream after attention (training only)
	ln2, rstd2   kernels.Tensor // (N,C) (N)
	g, u, h      kernels.Tensor // (N,F) gate, up, silu(gate)·up
	hKept        bool           // h is this layer's own, kept for the backward pass (acts.ownH)
	// qkv (Hq+2Hk) and gu (2F) are set for one-row inference scratch, whose
	// q, k, v (and g, u) are views of them: each group is then one product
	// with the adjacent weights (wqkv, wGateUp).
	qkv, gu kernels.Tensor
	// lu are the LoRA terms' (α/r)·x·Aᵀ (N,r) of the targets with adapters.
	lu [nTargets]kernels.Tensor
}

// gradScratch holds the activation gradients of one layer; the backward
// pass reuses it for every layer.
type gradScratch struct {
	dln          kernels.Tensor // (N,C)
	dh, dg, du   kernels.Tensor // (N,F)
	datt         kernels.Tensor // (N,Hq)
	dqr, dqn, dq kernels.Tensor // (N,Hq)
	dkr, dkn, dk kernels.Tensor // (N,Hk)
	dv           kernels.Tensor // (N,Hk)
	dlu          kernels.Tensor // (N,r) under LoRA
}

// layerRead says which copy of a layer's weights the forward products
// read (linear): the packed copy p when set (see packedLayer), else the
// bfloat16 copy b when set, else the float32 weights; and, with chunk > 0,
// in blocks of at most chunk rows (see rowChunk in sample.go). Training
// reads the weights themselves (a bfloat16 base's, frozenLayer) in one
// block; the sampler says what its pass reads.
type layerRead struct {
	b     *layerWeights
	p     *packedLayer
	chunk int
}

// linear: out (N,outDim) (+)= x (N,in) · Wᵀ with W (outDim,in) in HF layout;
// it reads the packed copy wp when set (see packedLayer), else the
// bfloat16 copy wb when set, else w, in one block.
func (m *Model) linear(out, x, w, wb, wp kernels.Tensor, N, in, outDim int, acc bool) {
	m.linearRows(out, x, w, wb, wp, N, in, outDim, acc, 0)
}

// linearRows is linear in blocks of at most chunk rows when chunk > 0, so
// that every row goes through the same small-M GEMM kernel whatever N is:
// a row's result then does not depend on which other rows share the batch
// (see rowChunk in sample.go). Packed products are row-invariant at every
// N and ignore chunk.
func (m *Model) linearRows(out, x, w, wb, wp kernels.Tensor, N, in, outDim int, acc bool, chunk int) {
	if !wp.IsZero() {
		m.be.(kernels.PackedNT).GemmPackedNT(out, x, wp, N, in, outDim, acc)
		return
	}
	if chunk > 0 && N > chunk {
		for r := 0; r < N; r += chunk {
			n := min(chunk, N-r)
			m.linearRows(out.View(r*outDim, n*outDim), x.View(r*in, n*in), w, wb, wp, n, in, outDim, acc, 0)
		}
		return
	}
	if !wb.IsZero() {
		m.be.GemmBF16NT(out, x, wb, N, in, outDim, acc)
		return
	}
	m.be.Gemm(kernels.NT, out, x, w, N, in, outDim, acc)
}

func bfOf(wb *layerWeights) layerWeights {
	if wb == nil {
		return layerWeights{}
	}
	return *wb
}

func packedOf(pw *packedLayer) packedLayer {
	if pw == nil {
		return packedLayer{}
	}
	return *pw
}

// attnProject: x (N,C) -> ln1 (N,C) -> q (N,Hq), k, v (N,Hk) -> per-head
// RMSNorm -> RoPE at positions pos -> qr (N,Hq), kr (N,Hk).
func (m *Model) attnProject(a *layerActs, w *layerWeights, r layerRead, x kernels.Tensor, pos []int32, N int) {
	d := m.d
	m.be.RMSNorm(a.ln1, a.rstd1, x, w.inNorm, N, d.C, m.Config.RMSNormEps)
	fused := !a.qkv.IsZero() && N == 1
	if fused {
		m.linearRows(a.qkv, a.ln1, w.wqkv, bfOf(r.b).wqkv, packedOf(r.p).qkv, 1, d.C, d.Hq+2*d.Hk, false, r.chunk)
	}
	m.projectQ(a, w, r, pos, N, fused)
	m.projectKV(a, w, r, pos, N, fused)
}

// projectQ: ln1 (N,C) -> q (N,Hq) -> per-head RMSNorm -> RoPE at pos ->
// qr; with done, q holds the product already (the fused one).
func (m *Model) projectQ(a *layerActs, w *layerWeights, r layerRead, pos []int32, N int, done bool) {
	d, be := m.d, m.be
	if !done {
		m.linearRows(a.q, a.ln1, w.wq, bfOf(r.b).wq, packedOf(r.p).q, N, d.C, d.Hq, false, r.chunk)
	}
	m.adapt(a, w, tQ, a.q, a.ln1, N)
	if m.Config.AttentionBias {
		be.BiasAdd(a.q, w.bq, N, d.Hq)
	}
	if m.Config.QKNorm() {
		be.RMSNorm(a.qn, a.qrstd, a.q, w.qNorm, N*d.H, d.hd, m.Config.RMSNormEps)
	}
	be.RoPE(a.qr, a.qn, pos, N, d.H, d.hd, m.Config.RopeTheta)
}

// projectKV: ln1 (N,C) -> k, v (N,Hk) -> per-head RMSNorm of k -> RoPE at
// pos -> kr; with done, k and v hold the products already.
func (m *Model) projectKV(a *layerActs, w *layerWeights, r layerRead, pos []int32, N int, done bool) {
	d, be, b, p := m.d, m.be, bfOf(r.b), packedOf(r.p)
	if !done {
		m.linearRows(a.k, a.ln1, w.wk, b.wk, p.k, N, d.C, d.Hk, false, r.chunk)
		m.linearRows(a.v, a.ln1, w.wv, b.wv, p.v, N, d.C, d.Hk, false, r.chunk)
	}
	m.adapt(a, w, tK, a.k, a.ln1, N)
	m.adapt(a, w, tV, a.v, a.ln1, N)
	if m.Config.AttentionBias {
		be.BiasAdd(a.k, w.bk, N, d.Hk)
		be.BiasAdd(a.v, w.bv, N, d.Hk)
	}
	if m.Config.QKNorm() {
		be.RMSNorm(a.kn, a.krstd, a.k, w.kNorm, N*d.KVH, d.hd, m.Config.RMSNormEps)
	}
	be.RoPE(a.kr, a.kn, pos, N, d.KVH, d.hd, m.Config.RopeTheta)
}

// queryRows returns views of a's first n rows on a row's query side (ln1,
// q, attention, output projection, MLP and the adapters' terms) for a
// pass that has moved the rows it keeps there (keptLayer); the keys and
// values stay a's, all rows. Inference scratch only: no saved statistics.
func (m *Model) queryRows(a *layerActs, n int) *layerActs {
	d, k := m.d, *a
	k.ln1, k.q, k.att, k.ln2 = a.ln1.View(0, n*d.C), a.q.View(0, n*d.Hq), a.att.View(0, n*d.Hq), a.ln2.View(0, n*d.C)
	k.qn, k.qr = a.qn.View(0, n*d.Hq), a.qr.View(0, n*d.Hq)
	k.g, k.u, k.h = a.g.View(0, n*d.F), a.u.View(0, n*d.F), a.h.View(0, n*d.F)
	k.qkv, k.gu = kernels.Tensor{}, kernels.Tensor{}
	for t := range k.lu {
		if !a.lu[t].IsZero() {
			k.lu[t] = a.lu[t].View(0, n*m.lora.cfg.Rank)
		}
	}
	return &k
}

// attnProjectBackward: dqr (N,Hq), dkr, dv (N,Hk) -> dres (N,C) += ∂L/∂x.
func (m *Model) attnProjectBackward(a *layerActs, w, wb, g *layerWeights, s *gradScratch, x kernels.Tensor, pos []int32, N int, dres kernels.Tensor) {
	d, be, b := m.d, m.be, bfOf(wb)
	be.Fill(s.dqn, 0)
	be.Fill(s.dkn, 0)
	be.RoPEBackward(s.dqn, s.dqr, pos, N, d.H, d.hd, m.Config.RopeTheta)
	be.RoPEBackward(s.dkn, s.dkr, pos, N, d.KVH, d.hd, m.Config.RopeTheta)
	dq, dk := s.dqn, s.dkn
	if m.Config.QKNorm() {
		dq, dk = s.dq, s.dk
		be.Fill(dq, 0)
		be.Fill(dk, 0)
		be.RMSNormBackward(dq, g.qNorm, s.dqn, a.q, w.qNorm, a.qrstd, N*d.H, d.hd)
		be.RMSNormBackward(dk, g.kNorm, s.dkn, a.k, w.kNorm, a.krstd, N*d.KVH, d.hd)
	}
	if m.Config.AttentionBias && !g.bq.IsZero() {
		be.BiasBackward(g.bq, dq, N, d.Hq)
		be.BiasBackward(g.bk, dk, N, d.Hk)
		be.BiasBackward(g.bv, s.dv, N, d.Hk)
	}
	m.inputGrad(s.dln, dq, w.wq, b.wq, N, d.Hq, d.C, false)
	m.inputGrad(s.dln, dk, w.wk, b.wk, N, d.Hk, d.C, true)
	m.inputGrad(s.dln, s.dv, w.wv, b.wv, N, d.Hk, d.C, true)
	weightGrad(be, g.wq, dq, a.ln1, d.Hq, N, d.C)
	weightGrad(be, g.wk, dk, a.ln1, d.Hk, N, d.C)
	weightGrad(be, g.wv, s.dv, a.ln1, d.Hk, N, d.C)
	m.adaptBackward(a, w, g, s, tQ, dq, a.ln1, s.dln, N)
	m.adaptBackward(a, w, g, s, tK, dk, a.ln1, s.dln, N)
	m.adaptBackward(a, w, g, s, tV, s.dv, a.ln1, s.dln, N)
	be.RMSNormBackward(dres, g.inNorm, s.dln, x, w.inNorm, a.rstd1, N, d.C)
}

// attnOut: out (N,C) += att (N,Hq)·Woᵀ, with o's adapter term.
func (m *Model) attnOut(a *layerActs, w *layerWeights, r layerRead, out kernels.Tensor, N int) {
	m.linearRows(out, a.att, w.wo, bfOf(r.b).wo, packedOf(r.p).o, N, m.d.Hq, m.d.C, true, r.chunk)
	m.adapt(a, w, tO, out, a.att, N)
}

// attnBackward: dres (B,T,C) = ∂L/∂x2 on entry, ∂L/∂x on return.
func (m *Model) attnBackward(a *layerActs, w, wb, g *layerWeights, s *gradScratch, x kernels.Tensor, pos []int32, br *kernels.Branches, B, T int, dres kernels.Tensor) {
	d, be, N := m.d, m.be, B*T
	m.inputGrad(s.datt, dres, w.wo, bfOf(wb).wo, N, d.C, d.Hq, false)
	weightGrad(be, g.wo, dres, a.att, d.C, N, d.Hq)
	m.adaptBackward(a, w, g, s, tO, dres, a.att, s.datt, N)
	be.Fill(s.dqr, 0)
	be.Fill(s.dkr, 0)
	be.Fill(s.dv, 0)
	if br != nil {
		be.(kernels.BranchAttention).AttentionBranchesBackward(s.dqr, s.dkr, s.dv, s.datt, a.att, a.lse, a.qr, a.kr, a.v, *br, B, T, d.H, d.KVH, d.hd)
	} else {
		be.AttentionBackward(s.dqr, s.dkr, s.dv, s.datt, a.att, a.lse, a.qr, a.kr, a.v, B, T, d.H, d.KVH, d.hd)
	}
	m.attnProjectBackward(a, w, wb, g, s, x, pos, N, dres)
}

// mlpForward: x (N,C) -> ln2 -> g, u (N,F) -> h = silu(g)·u -> out (N,C)
// += h·Wdownᵀ. out may be x itself (the inference residual update); a
// zero out stops at h (and the down adapter's x·Aᵀ term: recomputeLayer).
func (m *Model) mlpForward(a *layerActs, w *layerWeights, r layerRead, x, out kernels.Tensor, N int) {
	d, be, b, p, c := m.d, m.be, bfOf(r.b), packedOf(r.p), r.chunk
	be.RMSNorm(a.ln2, a.rstd2, x, w.postNorm, N, d.C, m.Config.RMSNormEps)
	if !a.gu.IsZero() && N == 1 {
		m.linearRows(a.gu, a.ln2, w.wGateUp, b.wGateUp, p.gu, 1, d.C, 2*d.F, false, c)
	} else {
		m.linearRows(a.g, a.ln2, w.wGate, b.wGate, p.g, N, d.C, d.F, false, c)
		m.linearRows(a.u, a.ln2, w.wUp, b.wUp, p.u, N, d.C, d.F, false, c)
	}
	m.adapt(a, w, tGate, a.g, a.ln2, N)
	m.adapt(a, w, tUp, a.u, a.ln2, N)
	be.SwiGLU(a.h, a.g, a.u)
	if out.IsZero() {
		m.adaptTerm(a, w, tDown, a.h, N)
		return
	}
	m.linearRows(out, a.h, w.wDown, b.wDown, p.down, N, d.F, d.C, true, c)
	m.adapt(a, w, tDown, out, a.h, N)
}

// mlpBackward: dres (N,C) = ∂L/∂out on entry, ∂L/∂x on return (x = x2).
// a.h is recomputed first unless the layer kept its own: otherwise the
// layers share it (see layoutActs).
func (m *Model) mlpBackward(a *layerActs, w, wb, g *layerWeights, s *gradScratch, N int, dres kernels.Tensor) {
	d, be, b := m.d, m.be, bfOf(wb)
	if !a.hKept {
		be.SwiGLU(a.h, a.g, a.u)
	}
	m.inputGrad(s.dh, dres, w.wDown, b.wDown, N, d.C, d.F, false)
	weightGrad(be, g.wDown, dres, a.h, d.C, N, d.F)
	m.adaptBackward(a, w, g, s, tDown, dres, a.h, s.dh, N)
	be.Fill(s.dg, 0)
	be.Fill(s.du, 0)
	be.SwiGLUBackward(s.dg, s.du, s.dh, a.g, a.u)
	m.inputGrad(s.dln, s.dg, w.wGate, b.wGate, N, d.F, d.C, false)
	m.inputGrad(s.dln, s.du, w.wUp, b.wUp, N, d.F, d.C, true)
	weightGrad(be, g.wGate, s.dg, a.ln2, d.F, N, d.C)
	weightGrad(be, g.wUp, s.du, a.ln2, d.F, N, d.C)
	m.adaptBackward(a, w, g, s, tGate, s.dg, a.ln2, s.dln, N)
	m.adaptBackward(a, w, g, s, tUp, s.du, a.ln2, s.dln, N)
	be.RMSNormBackward(dres, g.postNorm, s.dln, a.x2, w.postNorm, a.rstd2, N, d.C)
}

// weightGrad: g (out,in) += dyᵀ (out,N) · x (N,in), a projection's weight
// gradient; nothing when g is zero (the weights are frozen under LoRA).
func weightGrad(be kernels.Backend, g, dy, x kernels.Tensor, out, N, in int) {
	if !g.IsZero() {
		be.Gemm(kernels.TN, g, dy, x, out, N, in, true)
	}
}
