package model

import (
	"slices"

	"whale/kernels"
)

// The sampler's forward pass: a prefill wave's prompt rows or one decoding
// step's row a sequence, through the layers of pass.go with attention over
// each sequence's KV cache (kvcache.go), to the next-token logits of each
// item's last row.

// inferScratch holds one inference forward pass's activations for R rows
// and S logit rows.
type inferScratch struct {
	R, S   int
	x      kernels.Tensor // (R,C) residual stream; the pass leaves the S last rows' first
	a      layerActs      // per-layer scratch (no saved statistics)
	lastn  kernels.Tensor // (S,C) the last rows' final norm
	logits kernels.Tensor // (S,V)
	arena  kernels.Tensor
	lora   *loraState // the adapters the scratch has room for (lu)
}

func (s *Sampler) scratch(R, S int) *inferScratch {
	if s.sc != nil && s.sc.R == R && s.sc.S == S && s.sc.lora == s.m.lora {
		return s.sc
	}
	d := s.m.d
	layout := func(take func(int) kernels.Tensor) *inferScratch {
		sc := &inferScratch{R: R, S: S, x: take(R * d.C), lastn: take(S * d.C), logits: take(S * d.V)}
		sc.a = layerActs{ln1: take(R * d.C), qkv: take(R * (d.Hq + 2*d.Hk)),
			qr: take(R * d.Hq), kr: take(R * d.Hk), att: take(R * d.Hq), ln2: take(R * d.C),
			gu: take(R * 2 * d.F), h: take(R * d.F)}
		s.m.takeLoRAActs(&sc.a, R, take)
		a := &sc.a
		a.q, a.k, a.v = a.qkv.View(0, R*d.Hq), a.qkv.View(R*d.Hq, R*d.Hk), a.qkv.View(R*(d.Hq+d.Hk), R*d.Hk)
		a.g, a.u = a.gu.View(0, R*d.F), a.gu.View(R*d.F, R*d.F)
		if R != 1 {
			// Several rows interleave q, k and v in a fused product: keep
			// the three products apart.
			a.qkv, a.gu = kernels.Tensor{}, kernels.Tensor{}
		}
		sc.a.qn, sc.a.kn = sc.a.q, sc.a.k
		if s.m.Config.QKNorm() {
			sc.a.qn, sc.a.kn = take(R*d.Hq), take(R*d.Hk)
		}
		return sc
	}
	total := 0
	layout(func(n int) kernels.Tensor { total += n; return kernels.MakeTensor(nil, 0, n) })
	var arena kernels.Tensor
	if s.sc != nil && s.sc.arena.Len() >= total {
		arena = s.sc.arena
	} else {
		if s.sc != nil {
			s.m.be.Free(s.sc.arena)
		}
		s.sc = nil
		arena = s.m.be.Alloc(total)
	}
	off := 0
	sc := layout(func(n int) kernels.Tensor { t := arena.View(off, n); off += n; return t })
	sc.arena, sc.lora = arena, s.m.lora
	s.sc = sc
	return sc
}

// keepLastRows lets a prefill's last layer compute only each item's last
// row past its keys and values (layerPass.keep); tests turn it off to
// compare with every row computed.
var keepLastRows = true

// work asks the forward pass to feed toks[from:to] of a sequence into its
// cache at positions from..to-1; the sequence's logits are set after
// toks[:to].
type work struct {
	s        *seqState
	from, to int
}

// forward runs the inference forward pass over every work item at once:
// tokens (R) -> K, V appended to each sequence's cache -> logits of each
// item's last row. prompt says the rows are prompt tokens (see rowChunk).
func (s *Sampler) forward(items []work, prompt bool) {
	m, d, be := s.m, s.m.d, s.m.be
	R := 0
	for _, it := range items {
		R += it.to - it.from
	}
	tokens, pos := make([]int32, 0, R), make([]int32, 0, R)
	for _, it := range items {
		tokens = append(tokens, it.s.toks[it.from:it.to]...)
		for p := it.from; p < it.to; p++ {
			pos = append(pos, int32(p))
		}
	}
	sc := s.scratch(R, len(items))
	// Rows are canonical when every product is row-invariant: packed, or
	// in blocks of ≤ rowChunk.
	canonical := s.pk != nil || prompt || s.opts.Exact || R <= rowChunk
	p := &layerPass{N: R, pos: pos, x: sc.x, acts: &sc.a, bw: s.bw, pk: s.pk}
	if s.pk == nil && (prompt || s.opts.Exact) {
		p.chunk = rowChunk
	}
	S := len(items)
	var last []int // each item's last row, where an item has several
	if R > S {
		last = make([]int, S)
		r := 0
		for i, it := range items {
			r += it.to - it.from
			last[i] = r - 1
		}
		if keepLastRows {
			// Only they go on past the last layer's keys and values
			// (layerPass.keep).
			p.keep = last
		}
	}
	m.embed(sc.x, tokens)
	spans := make([]kernels.KVSpan, len(items))
	writes := make([]kernels.CacheWriteJob, 0, 2*len(items))
	p.attend = func(l int, a *layerActs, kept bool) {
		r := 0
		// The items' new keys and values go in one call a layer
		// (kernels.WriteCaches): a GPU backend launches one kernel for
		// them all.
		writes = writes[:0]
		for i, it := range items {
			n, q, pn := it.to-it.from, it.s, it.s.pn
			kr, vr := a.kr.View(r*d.Hk, n*d.Hk), a.v.View(r*d.Hk, n*d.Hk)
			var pk, pv kernels.Tensor
			if pn > 0 {
				pk, pv = m.kvLayer(q.prompt.kv, pn, l, kernels.Keys), m.kvLayer(q.prompt.kv, pn, l, kernels.Values)
			}
			if it.to <= pn {
				// Rows of the shared part of the prompt: into its cache.
				writes = append(writes,
					kernels.CacheWriteJob{Cache: pk, Src: kr, Kind: kernels.Keys, Pos0: it.from, Rows: n, Cap: pn},
					kernels.CacheWriteJob{Cache: pv, Src: vr, Kind: kernels.Values, Pos0: it.from, Rows: n, Cap: pn})
				spans[i] = kernels.KVSpan{K: pk, V: pv, Cap: pn, QRow: r, Rows: n, Pos0: it.from}
			} else {
				// it.from ≥ pn (prefillWave splits items at pn).
				oc := q.ownCap()
				kc, vc := m.kvLayer(q.kv, oc, l, kernels.Keys), m.kvLayer(q.kv, oc, l, kernels.Values)
				writes = append(writes,
					kernels.CacheWriteJob{Cache: kc, Src: kr, Kind: kernels.Keys, Pos0: it.from - pn, Rows: n, Cap: oc},
					kernels.CacheWriteJob{Cache: vc, Src: vr, Kind: kernels.Values, Pos0: it.from - pn, Rows: n, Cap: oc})
				spans[i] = kernels.KVSpan{K: kc, V: vc, Cap: oc, QRow: r, Rows: n, Pos0: it.from, PK: pk, PV: pv, PCap: pn, PN: pn}
				if pn > 0 && q.prompt.root != nil {
					rt, rc := q.prompt.root, len(q.prompt.root.tokens)
					spans[i].RK, spans[i].RV = m.kvLayer(rt.kv, rc, l, kernels.Keys), m.kvLayer(rt.kv, rc, l, kernels.Values)
					spans[i].RCap, spans[i].RN = rc, q.prompt.rn
				}
			}
			if kept {
				// The item's last row alone, at the front (keptLayer).
				spans[i].QRow, spans[i].Rows, spans[i].Pos0 = i, 1, it.to-1
			}
			r += n
		}
		kernels.WriteCaches(be, writes, d.KVH, d.hd)
		be.AttentionKV(a.att, a.qr, spans, d.H, d.KVH, d.hd)
	}
	m.layers(p)
	if p.keep == nil && last != nil {
		// Every row went through the last layer: the last rows to the
		// front (keptLayer leaves them there itself).
		m.toFront(sc.x, last, d.C)
	}
	be.RMSNorm(sc.lastn, kernels.Tensor{}, sc.x, m.w.norm, S, d.C, m.Config.RMSNormEps)
	var head, headP kernels.Tensor
	if s.bw != nil {
		head = s.bw.lmHead
	}
	if s.pk != nil {
		headP = s.pk.head
	}
	m.linearRows(sc.logits, sc.lastn, m.w.lmHead, head, headP, S, d.C, d.V, false, p.chunk)
	// Decoding reuses one host buffer: every sequence's logits from the
	// previous step were sampled before this step runs. Prompt logits may
	// wait for later prefill waves, so they get their own.
	var host []float32
	if prompt {
		host = make([]float32, S*d.V)
	} else {
		s.decodeHost = slices.Grow(s.decodeHost[:0], S*d.V)[:S*d.V]
		host = s.decodeHost
	}
	be.Store(host, sc.logits.View(0, S*d.V))
	for i, it := range items {
		it.s.logits = host[i*d.V : (i+1)*d.V : (i+1)*d.V]
		it.s.n = it.to
		if canonical && it.s.canon == it.from {
			it.s.canon = it.to
		}
	}
}
