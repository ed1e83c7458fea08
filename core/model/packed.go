package model

import "whale/kernels"

// Sampling multiplies every token by the same weights, so the sampler keeps
// them prepacked in the backend's NT panel layout when the backend can
// (kernels.PackedNT): a decoding step then streams each weight once as one
// contiguous run, nothing is re-arranged per call, and, because a packed
// product gives a row the same bits at every batch size, decoding is exact
// (a sequence's tokens and log-probabilities do not depend on what else
// shares its batch) at no cost.

// packedLayer holds one layer's packed products. qkv and gu pack the
// adjacent q, k, v (gate, up) weights as one matrix, for one-row products;
// q, k, v, g, u are views of their whole 16-column panels, for many rows.
type packedLayer struct {
	qkv, q, k, v kernels.Tensor
	o            kernels.Tensor
	gu, g, u     kernels.Tensor
	down         kernels.Tensor
}

// packedModel is every matrix of a model packed, in bf16 or float32, in
// one allocation.
type packedModel struct {
	layers []packedLayer
	head   kernels.Tensor
	arena  kernels.Tensor
}

// packPanel is the column granularity of views of packed weights: a view
// must start at a multiple of it and end at one or at the matrix's end
// (kernels.PackedNT).
const packPanel = 64

// packer returns m's backend as a kernels.PackedNT when it can pack.
func (m *Model) packer() (kernels.PackedNT, bool) {
	be, ok := m.be.(kernels.PackedNT)
	if !ok || be.PackedLen(m.d.C, m.d.V) == 0 {
		return nil, false
	}
	return be, true
}

// splitAtPanels reports whether the fused matrices split at panel edges
// (Hq, Hk and F multiples of 64, true of every usual shape), so that q, k,
// v, gate and up can be views of the fused packs; otherwise they are
// packed a second time on their own.
func (d dims) splitAtPanels() bool {
	return d.Hq%packPanel == 0 && d.Hk%packPanel == 0 && d.F%packPanel == 0
}

// layoutPacked carves the packed matrices of m with take, which hands out
// consecutive pieces of one allocation.
func (m *Model) layoutPacked(be kernels.PackedNT, take func(n int) kernels.Tensor) *packedModel {
	d := m.d
	pm := &packedModel{}
	for l := 0; l < d.L; l++ {
		var pl packedLayer
		pl.qkv = take(be.PackedLen(d.C, d.Hq+2*d.Hk))
		pl.o = take(be.PackedLen(d.Hq, d.C))
		pl.gu = take(be.PackedLen(d.C, 2*d.F))
		pl.down = take(be.PackedLen(d.F, d.C))
		lq, lk, lf := be.PackedLen(d.C, d.Hq), be.PackedLen(d.C, d.Hk), be.PackedLen(d.C, d.F)
		if d.splitAtPanels() {
			// The rows of q, k and v (gate and up) start at multiples of
			// 64 in the fused matrices.
			pl.q, pl.k, pl.v = pl.qkv.View(0, lq), pl.qkv.View(lq, lk), pl.qkv.View(lq+lk, lk)
			pl.g, pl.u = pl.gu.View(0, lf), pl.gu.View(lf, lf)
		} else {
			pl.q, pl.k, pl.v, pl.g, pl.u = take(lq), take(lk), take(lk), take(lf), take(lf)
		}
		pm.layers = append(pm.layers, pl)
	}
	pm.head = take(be.PackedLen(d.C, d.V))
	return pm
}

// packWeights packs every matrix of m, in bf16 when bf16 is set; ok is
// false when the backend cannot (see packer).
func (m *Model) packWeights(bf16 bool) (*packedModel, bool) {
	be, ok := m.packer()
	if !ok {
		return nil, false
	}
	total := 0
	m.layoutPacked(be, func(n int) kernels.Tensor { total += n; return kernels.MakeTensor(nil, 0, n) })
	arena := be.AllocPacked(total, bf16)
	off := 0
	pm := m.layoutPacked(be, func(n int) kernels.Tensor { t := arena.View(off, n); off += n; return t })
	pm.arena = arena
	pm.repack(m)
	return pm, true
}

// repack refreshes pm from m's current weights.
func (pm *packedModel) repack(m *Model) {
	be := m.be.(kernels.PackedNT)
	d := m.d
	for l := range pm.layers {
		w, pl := &m.w.layers[l], &pm.layers[l]
		be.PackNT(pl.qkv, w.wqkv, d.C, d.Hq+2*d.Hk)
		be.PackNT(pl.o, w.wo, d.Hq, d.C)
		be.PackNT(pl.gu, w.wGateUp, d.C, 2*d.F)
		be.PackNT(pl.down, w.wDown, d.F, d.C)
		if !d.splitAtPanels() {
			be.PackNT(pl.q, w.wq, d.C, d.Hq)
			be.PackNT(pl.k, w.wk, d.C, d.Hk)
			be.PackNT(pl.v, w.wv, d.C, d.Hk)
			be.PackNT(pl.g, w.wGate, d.C, d.F)
			be.PackNT(pl.u, w.wUp, d.C, d.F)
		}
	}
	be.PackNT(pm.head, m.w.lmHead, d.C, d.V)
}
