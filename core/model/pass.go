package model

import "whale/kernels"

// One forward pass through the decoder layers, shared by training (trunk,
// recomputeLayer) and sampling (Sampler.forward, decode.go). What differs
// between them is said by the layerPass: where the residual stream and
// the activations are, which copy of the weights the products read and
// in what blocks, and how a layer's attention is computed (over the batch's
// own positions in training, over each sequence's KV cache in sampling).

// layerPass describes one forward pass over N rows at positions pos.
type layerPass struct {
	N   int
	pos []int32
	// train holds the training activations: layer l reads the residual
	// stream a.res[l], keeps x2 in its set a.layers[l] and writes a.res[l+1].
	// When nil the pass runs in place on x with the one set acts (the
	// sampler's scratch).
	train *acts
	x     kernels.Tensor
	acts  *layerActs
	// bw and pk are the bfloat16 and packed copies of the weights the
	// products read (nil: the float32 weights; see layerRead), chunk the
	// row blocks they run in (0: one block).
	bw    *weights
	pk    *packedModel
	chunk int
	// keep, when set (inference only), lists in increasing order the rows
	// whose output the pass is for: the last layer computes every row's
	// keys and values (attend writes them to the caches) but its queries,
	// attention, output projection and MLP for these rows alone, which it
	// first moves to the front of x, where the pass leaves their output
	// (len(keep) rows).
	keep []int
	// attend sets a.att (N,Hq) from a.qr, a.kr and a.v of layer l; with
	// kept, a.qr and a.att hold the kept rows alone, in keep's order, and
	// a.kr and a.v all N.
	attend func(l int, a *layerActs, kept bool)
}

// trainPass returns the pass of training over (B, T) with activations a:
// the weights as the model holds them (a bfloat16 base's where it has
// one), attention causal within each sequence (and a shared prompt's
// branches apart: a.br).
func (m *Model) trainPass(a *acts, pos []int32, B, T int) *layerPass {
	p := &layerPass{N: B * T, pos: pos, train: a}
	if m.frozen != nil {
		p.bw = &m.frozen.wb
	}
	d := m.d
	p.attend = func(_ int, la *layerActs, _ bool) {
		if a.br != nil {
			m.be.(kernels.BranchAttention).AttentionBranches(la.att, la.lse, la.qr, la.kr, la.v, *a.br, B, T, d.H, d.KVH, d.hd)
			return
		}
		m.be.Attention(la.att, la.lse, la.qr, la.kr, la.v, B, T, d.H, d.KVH, d.hd)
	}
	return p
}

// read is what layer l's products read.
func (p *layerPass) read(l int) layerRead {
	r := layerRead{chunk: p.chunk}
	if p.bw != nil {
		r.b = &p.bw.layers[l]
	}
	if p.pk != nil {
		r.p = &p.pk.layers[l]
	}
	return r
}

// layers runs every decoder layer of the pass in order.
func (m *Model) layers(p *layerPass) {
	for l := 0; l < m.d.L; l++ {
		if a := p.train; a != nil {
			la := a.layers[l]
			m.layer(p, l, &la, a.res[l], la.x2, a.res[l+1])
			continue
		}
		if l == m.d.L-1 && p.keep != nil {
			m.keptLayer(p, l)
			continue
		}
		m.layer(p, l, p.acts, p.x, p.x, p.x)
	}
}

// layer runs decoder layer l: in (N,C) -> attention -> mid = in +
// attention(in) -> MLP -> out = mid + mlp(mid). Training keeps mid (x2)
// apart from in and out for the backward pass; the sampler's pass updates
// one stream in place (in, mid and out the same tensor). A zero out stops
// at the MLP's h (recomputeLayer: the output is stored already).
func (m *Model) layer(p *layerPass, l int, a *layerActs, in, mid, out kernels.Tensor) {
	w, r := &m.w.layers[l], p.read(l)
	m.attnProject(a, w, r, in, p.pos, p.N)
	p.attend(l, a, false)
	if p.train != nil {
		m.be.Copy(mid, in)
	}
	m.attnOut(a, w, r, mid, p.N)
	if p.train != nil && !out.IsZero() {
		m.be.Copy(out, mid)
	}
	m.mlpForward(a, w, r, mid, out, p.N)
}

// keptLayer runs the last decoder layer of an inference pass with keep
// set (see layerPass.keep). Every operation of a row depends on that row
// alone (the products are row-invariant where the sampler needs it, see
// rowChunk), so a kept row gets the bits it gets in the whole layer.
func (m *Model) keptLayer(p *layerPass, l int) {
	d, be, a := m.d, m.be, p.acts
	w, r, S := &m.w.layers[l], p.read(l), len(p.keep)
	be.RMSNorm(a.ln1, a.rstd1, p.x, w.inNorm, p.N, d.C, m.Config.RMSNormEps)
	m.projectKV(a, w, r, p.pos, p.N, false)
	m.toFront(a.ln1, p.keep, d.C)
	m.toFront(p.x, p.keep, d.C)
	pos := make([]int32, S)
	for i, k := range p.keep {
		pos[i] = p.pos[k]
	}
	ka := m.queryRows(a, S)
	x := p.x.View(0, S*d.C)
	m.projectQ(ka, w, r, pos, S, false)
	p.attend(l, ka, true)
	m.attnOut(ka, w, r, x, S)
	m.mlpForward(ka, w, r, x, x, S)
}

// toFront moves rows (increasing, so rows[i] ≥ i) of t, width values
// each, to t's first len(rows) rows in order: row rows[i] is read before
// row i is written over.
func (m *Model) toFront(t kernels.Tensor, rows []int, width int) {
	for i, k := range rows {
		if k != i {
			m.be.Copy(t.View(i*width, width), t.View(k*width, width))
		}
	}
}
