package kernels

import (
	"fmt"
	"math"
	"slices"
)

func checkHeads(H, KVH, hd int) {
	if H <= 0 || KVH <= 0 || hd <= 0 || H%KVH != 0 {
		panic(fmt.Sprintf("kernels: attention with %d heads, %d KV heads, head dim %d", H, KVH, hd))
	}
}

// attnBlock is the number of query rows one block of training attention
// handles per head: its scores (heads × attnBlock × T) stay in cache.
const attnBlock = 64

// attnBuf is one worker's scratch for blocked attention over T positions,
// for up to a group's g query heads at a time.
type attnBuf[T Float] struct {
	kb, vb, dkb, dvb []T // (T,hd) keys, values of one KV head and their gradients
	qb, ob, dob, dqb []T // (g·attnBlock,hd)
	s, dp            []T // (g·attnBlock,T) scores / probabilities, their gradient
	d                []T // (g·attnBlock) rowsum(dout·out)
}

func newAttnBuf[T Float](T_, hd, g int) *attnBuf[T] {
	bs := g * min(attnBlock, T_)
	return &attnBuf[T]{kb: make([]T, T_*hd), vb: make([]T, T_*hd), dkb: make([]T, T_*hd), dvb: make([]T, T_*hd),
		qb: make([]T, bs*hd), ob: make([]T, bs*hd), dob: make([]T, bs*hd), dqb: make([]T, bs*hd),
		s: make([]T, bs*T_), dp: make([]T, bs*T_), d: make([]T, bs)}
}

// attnBufKey is the shape an attnBuf was made for.
type attnBufKey struct{ T, hd, g int }

// pooledAttnBuf is an attnBuf with the shape it was made for.
type pooledAttnBuf[T Float] struct {
	key attnBufKey
	buf *attnBuf[T]
}

// getAttnBuf returns scratch for blocked attention over T_ positions
// (newAttnBuf), reusing one a finished call put back: a training step
// runs attention twice a layer, and making the buffers anew cleared
// about half a megabyte each time. Nothing reads a buffer before
// writing it (the gradient sums are cleared per KV head), so reused
// contents change no result.
func (c *CPU[T]) getAttnBuf(T_, hd, g int) *pooledAttnBuf[T] {
	k := attnBufKey{T_, hd, g}
	if p, ok := c.attnBufs.Get().(*pooledAttnBuf[T]); ok && p.key == k {
		return p
	}
	return &pooledAttnBuf[T]{key: k, buf: newAttnBuf[T](T_, hd, g)}
}

// gatherRows copies n rows of width hd, stride ld, from src into dst.
func gatherRows[T Float](dst, src []T, n, hd, ld int) {
	for r := 0; r < n; r++ {
		copy(dst[r*hd:r*hd+hd], src[r*ld:r*ld+hd])
	}
}

// attnHeads is how many query heads of a group of grp the training
// attention stacks into one product for a block of nb query rows: the
// whole group, unless that would move the block's score product (nb rows,
// NT) from the dot-product tiles to the packed kernel, whose sums are
// ordered differently (see RowInvariantRows): stacking heads then changes
// no bit of the forward pass. Stacked, each block packs its keys once for
// all heads, and the products are larger.
func attnHeads(grp, nb int) int {
	if nb >= smallMNT || grp*nb < smallMNT {
		return grp
	}
	return 1
}

// Attention implements Backend. Work is split over (sequence, KV head);
// each worker copies its keys and values into contiguous blocks and, per
// block of attnBlock query rows of the heads sharing them (stacked, see
// attnHeads), computes the scores with one GEMM, the causal softmax in
// place and the output with another.
func (c *CPU[T]) Attention(out, lse, q, k, v Tensor, B, T_, H, KVH, hd int) {
	c.attention(out, lse, q, k, v, nil, B, T_, H, KVH, hd)
}

// AttentionBranches implements BranchAttention.
func (c *CPU[T]) AttentionBranches(out, lse, q, k, v Tensor, br Branches, B, T_, H, KVH, hd int) {
	br.check(B, T_)
	c.attention(out, lse, q, k, v, &br, B, T_, H, KVH, hd)
}

// attention is Attention over rows laid out as br (nil: one sequence a
// row). A position's scores are gathered to the keys it sees for the
// softmax and put back with zeros for the others, so the probabilities
// of the keys it sees, and everything after them, are those of its own
// sequence laid out alone.
func (c *CPU[T]) attention(out, lse, q, k, v Tensor, br *Branches, B, T_, H, KVH, hd int) {
	checkHeads(H, KVH, hd)
	o, ls, qs, kk, vs := c.s(out), c.s(lse), c.s(q), c.s(k), c.s(v)
	N := B * T_
	need("Attention out", len(o), N*H*hd)
	need("Attention lse", len(ls), B*H*T_)
	need("Attention q", len(qs), N*H*hd)
	need("Attention k", len(kk), N*KVH*hd)
	need("Attention v", len(vs), N*KVH*hd)
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw, kw := H*hd, KVH*hd
	Parallel(B*KVH, 1, func(lo, hi int) {
		pb := c.getAttnBuf(T_, hd, grp)
		defer c.attnBufs.Put(pb)
		w := pb.buf
		for u := lo; u < hi; u++ {
			b, kh := u/KVH, u%KVH
			gatherRows(w.kb, kk[b*T_*kw+kh*hd:], T_, hd, kw)
			gatherRows(w.vb, vs[b*T_*kw+kh*hd:], T_, hd, kw)
			for i0 := 0; i0 < T_; i0 += attnBlock {
				nb := min(attnBlock, T_-i0)
				g := attnHeads(grp, nb)
				for h0 := kh * grp; h0 < kh*grp+grp; h0 += g {
					n := i0 + nb // keys the block can see
					rows := g * nb
					for j := 0; j < g; j++ {
						gatherRows(w.qb[j*nb*hd:], qs[(b*T_+i0)*qw+(h0+j)*hd:], nb, hd, qw)
					}
					c.gemm1(NT, w.s[:rows*n], w.qb[:rows*hd], w.kb[:n*hd], rows, hd, n, false)
					for j := 0; j < g; j++ {
						for r := 0; r < nb; r++ {
							i := i0 + r
							row := w.s[(j*nb+r)*n : (j*nb+r)*n+n]
							lo, hi := br.gap(b, i, T_)
							ls[(b*H+h0+j)*T_+i] = T(c.softmax(row[:closeGap(row, lo, hi, i)], scale))
							openGap(row, lo, hi, i)
							clear(row[i+1:])
						}
					}
					c.gemm1(NN, w.ob[:rows*hd], w.s[:rows*n], w.vb[:n*hd], rows, n, hd, false)
					for j := 0; j < g; j++ {
						for r := 0; r < nb; r++ {
							dst := (b*T_+i0+r)*qw + (h0+j)*hd
							copy(o[dst:dst+hd], w.ob[(j*nb+r)*hd:(j*nb+r)*hd+hd])
						}
					}
				}
			}
		}
	})
}

// AttentionBackward implements Backend, blocked and stacked like
// Attention. Each worker owns the dk and dv rows of its (sequence, KV
// head) and the dq rows of the query heads that read it, and adds into
// them in a fixed order: block by block, and within a block head by head
// (the dk and dv products stay one per head).
func (c *CPU[T]) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v Tensor, B, T_, H, KVH, hd int) {
	c.attentionBackward(dq, dk, dv, dout, out, lse, q, k, v, nil, B, T_, H, KVH, hd)
}

// AttentionBranchesBackward implements BranchAttention.
func (c *CPU[T]) AttentionBranchesBackward(dq, dk, dv, dout, out, lse, q, k, v Tensor, br Branches, B, T_, H, KVH, hd int) {
	br.check(B, T_)
	c.attentionBackward(dq, dk, dv, dout, out, lse, q, k, v, &br, B, T_, H, KVH, hd)
}

// attentionBackward is AttentionBackward over rows laid out as br (nil:
// one sequence a row), gathering and putting back a position's scores
// as attention does.
func (c *CPU[T]) attentionBackward(dq, dk, dv, dout, out, lse, q, k, v Tensor, br *Branches, B, T_, H, KVH, hd int) {
	checkHeads(H, KVH, hd)
	dqs, dks, dvs, dos, os, ls := c.s(dq), c.s(dk), c.s(dv), c.s(dout), c.s(out), c.s(lse)
	qs, kk, vs := c.s(q), c.s(k), c.s(v)
	N := B * T_
	for _, x := range []struct {
		n    string
		l, w int
	}{{"dq", len(dqs), N * H * hd}, {"dk", len(dks), N * KVH * hd}, {"dv", len(dvs), N * KVH * hd},
		{"dout", len(dos), N * H * hd}, {"out", len(os), N * H * hd}, {"lse", len(ls), B * H * T_},
		{"q", len(qs), N * H * hd}, {"k", len(kk), N * KVH * hd}, {"v", len(vs), N * KVH * hd}} {
		need("AttentionBackward "+x.n, x.l, x.w)
	}
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw, kw := H*hd, KVH*hd
	Parallel(B*KVH, 1, func(lo, hi int) {
		pb := c.getAttnBuf(T_, hd, grp)
		defer c.attnBufs.Put(pb)
		w := pb.buf
		for u := lo; u < hi; u++ {
			b, kh := u/KVH, u%KVH
			kbase := b*T_*kw + kh*hd
			gatherRows(w.kb, kk[kbase:], T_, hd, kw)
			gatherRows(w.vb, vs[kbase:], T_, hd, kw)
			clear(w.dkb)
			clear(w.dvb)
			for i0 := 0; i0 < T_; i0 += attnBlock {
				nb := min(attnBlock, T_-i0)
				g := attnHeads(grp, nb)
				for h0 := kh * grp; h0 < kh*grp+grp; h0 += g {
					n := i0 + nb
					rows := g * nb
					for j := 0; j < g; j++ {
						qbase := (b*T_+i0)*qw + (h0+j)*hd
						gatherRows(w.qb[j*nb*hd:], qs[qbase:], nb, hd, qw)
						gatherRows(w.dob[j*nb*hd:], dos[qbase:], nb, hd, qw)
						gatherRows(w.ob[j*nb*hd:], os[qbase:], nb, hd, qw)
					}
					for r := 0; r < rows; r++ {
						w.d[r] = c.dot(w.dob[r*hd:r*hd+hd], w.ob[r*hd:r*hd+hd])
					}
					s, dp := w.s[:rows*n], w.dp[:rows*n]
					c.gemm1(NT, s, w.qb[:rows*hd], w.kb[:n*hd], rows, hd, n, false)
					c.gemm1(NT, dp, w.dob[:rows*hd], w.vb[:n*hd], rows, hd, n, false)
					for j := 0; j < g; j++ {
						for r := 0; r < nb; r++ {
							i, x := i0+r, j*nb+r
							l := ls[(b*H+h0+j)*T_+i]
							srow, drow := s[x*n:x*n+n], dp[x*n:x*n+n]
							lo, hi := br.gap(b, i, T_)
							m := closeGap(srow, lo, hi, i)
							closeGap(drow, lo, hi, i)
							c.attnDS(srow[:m], drow[:m], scale, l, w.d[x]) // P, dS
							openGap(srow, lo, hi, i)
							openGap(drow, lo, hi, i)
							clear(srow[i+1:])
							clear(drow[i+1:])
						}
					}
					c.gemm1(NN, w.dqb[:rows*hd], dp, w.kb[:n*hd], rows, n, hd, false)
					for j := 0; j < g; j++ {
						for r := 0; r < nb; r++ {
							qbase := (b*T_+i0+r)*qw + (h0+j)*hd
							d := dqs[qbase : qbase+hd]
							c.add(d, d, w.dqb[(j*nb+r)*hd:(j*nb+r)*hd+hd])
						}
					}
					for j := 0; j < g; j++ {
						sj, dpj := s[j*nb*n:(j+1)*nb*n], dp[j*nb*n:(j+1)*nb*n]
						c.gemm1(TN, w.dkb[:n*hd], dpj, w.qb[j*nb*hd:(j+1)*nb*hd], n, nb, hd, true)
						c.gemm1(TN, w.dvb[:n*hd], sj, w.dob[j*nb*hd:(j+1)*nb*hd], n, nb, hd, true)
					}
				}
			}
			for r := 0; r < T_; r++ {
				dkr := dks[kbase+r*kw : kbase+r*kw+hd]
				dvr := dvs[kbase+r*kw : kbase+r*kw+hd]
				c.add(dkr, dkr, w.dkb[r*hd:r*hd+hd])
				c.add(dvr, dvr, w.dvb[r*hd:r*hd+hd])
			}
		}
	})
}

// The CPU backend keeps a KV cache head by head (cap·hd elements each):
// keys with each head's positions in blocks of 8 (kvAt, attn_decode.go),
// so that for one block of positions the dimensions are 8-wide vectors
// along the context; values position by position, so that a position's
// dimensions are vectors. Either way a head's whole cache is one range.

// cpuPrefixGranule is the CPU backend's granule of the prefix split: any
// multiple of kvBlock keeps the split from changing a result (every sum
// runs in position order, whichever cache holds a position), and 32 is
// the prefix tiles' column tile (attn_shared.go). The finer the split,
// the more of a prompt its samples share: a sample's own cache begins
// after the prompt's whole granules.
const cpuPrefixGranule = 32

// PrefixGranule is the CPU backend's granule of the prefix split of a
// KVSpan (kernels.PrefixGranule).
func (c *CPU[T]) PrefixGranule() int { return cpuPrefixGranule }

// RootSpans implements the method kernels.RootSpans asks for: the float32
// backend gathers rows by root (attn_root.go) where it has the tiles.
func (c *CPU[T]) RootSpans() bool { return c.root != nil && prefixTiles }

// checkKVSpanPositions panics, naming span i, unless its rows fit its
// cache after its prefix and the prefix is whole blocks of a cache that
// holds it, ending before the rows; it returns the positions the span's
// last row sees.
func checkKVSpanPositions(i int, sp KVSpan) int {
	n := sp.Pos0 + sp.Rows
	if n-sp.PN > sp.Cap {
		panic(fmt.Sprintf("kernels: AttentionKV span %d reaches position %d of a cache of %d after a prefix of %d", i, n, sp.Cap, sp.PN))
	}
	if sp.PN > 0 && (sp.PN > sp.PCap || sp.Pos0 < sp.PN || sp.PN%cpuPrefixGranule != 0) {
		panic(fmt.Sprintf("kernels: AttentionKV span %d: prefix of %d positions in a cache of %d, rows from position %d", i, sp.PN, sp.PCap, sp.Pos0))
	}
	if sp.RN > 0 && (sp.RN > sp.PN || sp.RN > sp.RCap || sp.RN%cpuPrefixGranule != 0) {
		panic(fmt.Sprintf("kernels: AttentionKV span %d: root of %d positions in a cache of %d, prefix of %d", i, sp.RN, sp.RCap, sp.PN))
	}
	return n
}

// checkKVSpanLengths panics unless a span's caches (k, v and, with a
// prefix, pk and pv elements, whatever their type) and the call's query
// and output (q, o elements) are long enough for it.
func checkKVSpanLengths(sp KVSpan, k, v, pk, pv, q, o, KVH, hd, qw int) {
	if sp.PN > 0 {
		need("AttentionKV PK", pk, KVH*sp.PCap*hd)
		need("AttentionKV PV", pv, KVH*sp.PCap*hd)
	}
	if sp.RN > 0 {
		need("AttentionKV RK", sp.RK.Len(), KVH*sp.RCap*hd)
		need("AttentionKV RV", sp.RV.Len(), KVH*sp.RCap*hd)
	}
	need("AttentionKV K", k, KVH*sp.Cap*hd)
	need("AttentionKV V", v, KVH*sp.Cap*hd)
	need("AttentionKV q", q, (sp.QRow+sp.Rows)*qw)
	need("AttentionKV out", o, (sp.QRow+sp.Rows)*qw)
}

// AttentionKV implements Backend, parallel over (span, query row, KV
// head). A unit scores the group of query heads sharing one KV head and
// mixes the values as small matrix products over all cached positions, in
// chunks of 4, 2 and 1 heads (attn_decode.go; the float64 reference does
// it with plain loops over the cache's positions); nothing in it depends
// on the other rows, so a row's result does not depend on what else the
// call holds.
func (c *CPU[T]) AttentionKV(out, q Tensor, spans []KVSpan, H, KVH, hd int) {
	checkHeads(H, KVH, hd)
	o, qs := c.s(out), c.s(q)
	if len(spans) > 0 && isBF16(spans[0].K) {
		c.attentionKVBF16(o, qs, spans, H, KVH, hd)
		return
	}
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw := H * hd
	nu := 0 // units: rows × KV heads
	dc := c.getDecodeBuf(len(spans))
	defer c.putDecodeBuf(dc)
	ks, vs, pks, pvs, rks, rvs := dc.ks, dc.vs, dc.pks, dc.pvs, dc.rks, dc.rvs
	maxN := 0
	for i, sp := range spans {
		ks[i], vs[i] = c.s(sp.K), c.s(sp.V)
		n := checkKVSpanPositions(i, sp)
		npk, npv := 0, 0
		if sp.PN > 0 {
			pks[i], pvs[i] = c.s(sp.PK), c.s(sp.PV)
			npk, npv = len(pks[i]), len(pvs[i])
		}
		if sp.RN > 0 {
			rks[i], rvs[i] = c.s(sp.RK), c.s(sp.RV)
		}
		checkKVSpanLengths(sp, len(ks[i]), len(vs[i]), npk, npv, len(qs), len(o), KVH, hd, qw)
		maxN = max(maxN, n)
		nu += sp.Rows * KVH
	}
	// A unit is ~4·grp·n·hd flops; forking for less than ~2^16 flops per
	// goroutine costs more than it saves. (At 2^18 batch-1 decoding of
	// bench-small, two units of ~77K flops, ran on one thread: forking them
	// took BenchmarkCPUAttentionKVDecodeB1 from 4.2–5.5 to 2.6–3.8 µs.)
	tile := 0
	if c.prompt != nil && promptTiles(hd) {
		tile = promptTile
	}
	if c.root == nil {
		rks = nil
	}
	planUnits(&dc.plan, spans, pks, rks, nu, KVH, grp, tile, c.shared != nil && prefixTiles)
	units, order, rorder := dc.plan.units, dc.plan.order, dc.plan.rorder
	Parallel(len(units), 1+(1<<16)/(1+4*maxN*hd*grp), func(lo, hi int) {
		sb := c.getDecodeScratch(grp * (maxN + kvBlock))
		defer c.decodeScratch.Put(sb)
		sc := *sb
		var st *promptState[T]
		var sh *sharedState
		for j, un := range units[lo:hi] {
			s, r, kh := int(un.span), int(un.row), int(un.head)
			sp := spans[s]
			if un.group > 0 {
				if sh == nil {
					sh = c.getSharedState()
					defer c.sharedStates.Put(sh)
				}
				if un.root {
					members := rorder[s : s+int(un.group)]
					c.root(sh, o, qs, spans, members, tile, ks, vs, pks, pvs, rks[members[0]], rvs[members[0]], kh, grp, hd, qw, scale)
					continue
				}
				members := order[s : s+int(un.group)]
				c.shared(sh, o, qs, spans, members, tile, ks, vs, pks, pvs, pks[members[0]], pvs[members[0]], kh, grp, hd, qw, scale)
				continue
			}
			if un.tile > 0 {
				if st == nil {
					st = c.getPromptState()
					defer c.promptStates.Put(st)
				}
				c.prompt(st, o, qs, sp, s, r, kh, grp, hd, qw, ks[s], vs[s], pks[s], pvs[s], scale)
				continue
			}
			if c.prefetch != nil && lo+j+1 < hi && units[lo+j+1].group == 0 && !sameCache(un, units[lo+j+1]) {
				// The next unit's own keys and values, while this one
				// computes (one range each, see kvAt): in a decoding batch
				// they come from L3 or memory. (A prompt's next row reads
				// what this one did, now in cache.)
				nx := units[lo+j+1]
				ns := spans[nx.span]
				np := ns.Pos0 + int(nx.row) + 1 - ns.PN
				at, m := int(nx.head)*hd*ns.Cap, min(ns.Cap, (np+kvBlock-1)&^(kvBlock-1))*hd
				c.prefetch(ks[nx.span][at:], m, 1, m)
				c.prefetch(vs[nx.span][at:], m, 1, m)
			}
			row, n, cp, pn, pcp := sp.QRow+r, sp.Pos0+r+1, sp.Cap, sp.PN, sp.PCap
			qg := qs[row*qw+kh*grp*hd : row*qw+(kh+1)*grp*hd]
			kt, vt := ks[s][kh*hd*cp:(kh+1)*hd*cp], vs[s][kh*hd*cp:(kh+1)*hd*cp]
			var pkt, pvt []T
			if pn > 0 {
				pkt, pvt = pks[s][kh*hd*pcp:(kh+1)*hd*pcp], pvs[s][kh*hd*pcp:(kh+1)*hd*pcp]
			}
			og := o[row*qw+kh*grp*hd : row*qw+(kh+1)*grp*hd]
			if c.scores != nil {
				// Rows of scores ldn apart, whole vectors of positions.
				ldn := (n + kvBlock - 1) &^ (kvBlock - 1)
				negInf := T(math.Inf(-1))
				for g := 0; g < grp; {
					rows := decodeChunk(grp - g)
					pr, q, out := sc[g*ldn:(g+rows)*ldn], qg[g*hd:(g+rows)*hd], og[g*hd:(g+rows)*hd]
					// Scores of the prefix cache's positions, then of the
					// sequence's own.
					if pn > 0 {
						c.scores(rows, pr, ldn, q, hd, pkt, pcp, pn)
					}
					c.scores(rows, pr[pn:], ldn, q, hd, kt, cp, n-pn)
					// e^(scale·s − max), the positions past n as e^−∞ = 0 so
					// that a row runs in whole vectors; the values are summed
					// with these weights and the outputs divided by the
					// weights' sum after.
					var sums [4]T
					for i := 0; i < rows; i++ {
						row := pr[i*ldn : i*ldn+ldn]
						for p := n; p < ldn; p++ {
							row[p] = negInf
						}
						sums[i] = c.softExp(row, scale)
					}
					// The values of every position in order, prefix first: one
					// FMA chain an output, whichever cache holds a position.
					clear(out)
					if pn > 0 {
						c.mix(rows, out, pr, ldn, pvt, hd, pn)
					}
					c.mix(rows, out, pr[pn:], ldn, vt, hd, n-pn)
					for i := 0; i < rows; i++ {
						inv := 1 / sums[i]
						for j := range out[i*hd : i*hd+hd] {
							out[i*hd+j] *= inv
						}
					}
					g += rows
				}
				continue
			}
			for g := 0; g < grp; g++ {
				pr, qh, oh := sc[g*n:g*n+n], qg[g*hd:g*hd+hd], og[g*hd:g*hd+hd]
				clear(pr)
				for d, x := range qh {
					for p := 0; p < pn; p++ {
						pr[p] += x * pkt[kvAt(pcp, hd, d, p)]
					}
					for p := pn; p < n; p++ {
						pr[p] += x * kt[kvAt(cp, hd, d, p-pn)]
					}
				}
				c.softmax(pr, scale)
				for d := range oh {
					var own, pre T
					for p := pn; p < n; p++ {
						own += pr[p] * vt[(p-pn)*hd+d]
					}
					for p := 0; p < pn; p++ {
						pre += pr[p] * pvt[p*hd+d]
					}
					oh[d] = own + pre
				}
			}
		}
	})
}

// decodeBuf is AttentionKV's per-call scratch: the spans' cache slices
// and the units.
type decodeBuf[T Float] struct {
	ks, vs, pks, pvs, rks, rvs [][]T
	// The same for bfloat16 caches (attentionKVBF16).
	ks16, vs16, pks16, pvs16 [][]uint16
	plan                     unitPlan
}

// getDecodeBuf returns a decodeBuf for n spans, reusing one a finished
// call put back (c.decodeBufs): a decoding step calls AttentionKV once a
// layer, and these few small slices were most of its allocations. They
// come back cleared (putDecodeBuf): spans without a prefix leave pks and
// pvs unset.
func (c *CPU[T]) getDecodeBuf(n int) *decodeBuf[T] {
	d, ok := c.decodeBufs.Get().(*decodeBuf[T])
	if !ok {
		d = &decodeBuf[T]{}
	}
	grow := func(s [][]T) [][]T { return slices.Grow(s, n)[:n] }
	d.ks, d.vs, d.pks, d.pvs, d.rks, d.rvs = grow(d.ks), grow(d.vs), grow(d.pks), grow(d.pvs), grow(d.rks), grow(d.rvs)
	grow16 := func(s [][]uint16) [][]uint16 { return slices.Grow(s, n)[:n] }
	d.ks16, d.vs16, d.pks16, d.pvs16 = grow16(d.ks16), grow16(d.vs16), grow16(d.pks16), grow16(d.pvs16)
	return d
}

// putDecodeBuf clears d's cache slices (a pooled buffer must not keep
// caches alive) and puts it back.
func (c *CPU[T]) putDecodeBuf(d *decodeBuf[T]) {
	for _, s := range [][][]T{d.ks, d.vs, d.pks, d.pvs, d.rks, d.rvs} {
		clear(s)
	}
	d.ks, d.vs, d.pks, d.pvs, d.rks, d.rvs = d.ks[:0], d.vs[:0], d.pks[:0], d.pvs[:0], d.rks[:0], d.rvs[:0]
	for _, s := range [][][]uint16{d.ks16, d.vs16, d.pks16, d.pvs16} {
		clear(s)
	}
	d.ks16, d.vs16, d.pks16, d.pvs16 = d.ks16[:0], d.vs16[:0], d.pks16[:0], d.pvs16[:0]
	c.decodeBufs.Put(d)
}

// getDecodeScratch returns a worker's scores and partial outputs for
// AttentionKV, at least n elements, from c.decodeScratch; the kernels
// write every element they read.
func (c *CPU[T]) getDecodeScratch(n int) *[]T {
	p, ok := c.decodeScratch.Get().(*[]T)
	if !ok {
		p = new([]T)
	}
	if cap(*p) < n {
		*p = make([]T, n)
	}
	*p = (*p)[:n]
	return p
}

// getPromptState returns a worker's scratch for prompt tiles, holding no
// positions (a pooled one's are another call's).
func (c *CPU[T]) getPromptState() *promptState[T] {
	st, ok := c.promptStates.Get().(*promptState[T])
	if !ok {
		st = &promptState[T]{}
	}
	st.span, st.head, st.n = -1, -1, 0
	return st
}

// getSharedState returns a worker's scratch for runs sharing a prefix.
func (c *CPU[T]) getSharedState() *sharedState {
	if sh, ok := c.sharedStates.Get().(*sharedState); ok {
		return sh
	}
	return &sharedState{}
}

// attnUnit is one unit of AttentionKV's work: a query row of a span
// against one KV head; with tile > 0 that many rows from row computed
// together (promptRows); with group > 0 the untiled rows of the spans
// order[span:span+group] (unitPlan's order), which share a prefix cache,
// computed together (sharedRows).
type attnUnit struct {
	span, row, head, tile, group int32
	// root: the group's spans are rorder[span:span+group], which share a
	// root cache (rootRows).
	root bool
}

// sameCache says units a and b read the same keys and values: one
// span's rows of one KV head.
func sameCache(a, b attnUnit) bool {
	return a.group == 0 && b.group == 0 && a.span == b.span && a.head == b.head
}

// unitPlan is AttentionKV's order of work (planUnits), kept in a
// decodeBuf so that planning a call allocates nothing.
type unitPlan struct {
	units []attnUnit
	order []int32 // the spans, gathered by prefix
	// rorder holds the spans whose untiled rows go with their root's
	// (planRoots), gathered by root; rooted marks them.
	rorder []int32
	rooted []bool
	// Scratch: each span's gathering; per gathering its first span, its
	// size and where its next span goes in order.
	of, reps, sizes, next []int32
}

// samePrefixCache says spans i and j read their first PN positions from
// one prefix cache (pks: the spans' prefix caches).
func samePrefixCache[E any, I int | int32](spans []KVSpan, pks [][]E, i, j I) bool {
	return spans[i].PN > 0 && spans[j].PN == spans[i].PN && len(pks[i]) == len(pks[j]) && &pks[i][0] == &pks[j][0]
}

// planUnits orders AttentionKV's n units into p. The spans that read the
// same prefix cache (the samples of one prompt, wherever they sit in the
// batch) are gathered, in the order their prefixes first appear, into
// p.order; a span without a prefix is a gathering of its own. A gathering
// goes head by head, every span of it in turn, and within a span its rows
// in turn: a head's keys and values (hd·n of each, shared by a prompt's
// rows and by the samples of one prompt) are read from memory once and
// then from the core's cache, not once a row or a span; and a prompt's
// causal rows, whose cost grows with their position, split evenly between
// threads that take a contiguous share of the units each. With tile > 0 a
// span of at least tile rows (a prompt) goes in tiles of that many rows
// (attn_prompt.go), its first Rows%tile rows one at a time; and, with
// shared, a gathering of spans sharing a prefix whose untiled rows times
// grp (query heads a KV head) make at least sharedMinRows goes as one unit
// a head for those rows (attn_shared.go). The order and the tiles change
// no result (units are independent, and a tile gives each row the bits of
// its own unit), only which thread computes what when.
func planUnits[E any](p *unitPlan, spans []KVSpan, pks, rks [][]E, n, KVH, grp, tile int, shared bool) {
	p.units = slices.Grow(p.units[:0], n)
	p.rooted = slices.Grow(p.rooted[:0], len(spans))[:len(spans)]
	clear(p.rooted)
	if shared && tile > 0 && rks != nil {
		planRoots(p, spans, pks, rks, KVH, grp, tile)
	}
	samePrefix := func(i, j int) bool {
		return !p.rooted[i] && !p.rooted[j] && samePrefixCache(spans, pks, i, j)
	}
	// Each span joins the gathering of the first earlier span with its
	// prefix (a batch holds a few prompts: the scan is short), then the
	// gatherings are laid out one after another in order, each in batch
	// order.
	p.of, p.order = grow(p.of, len(spans)), grow(p.order, len(spans))
	p.reps, p.sizes = p.reps[:0], p.sizes[:0]
	for i := range spans {
		g := len(p.reps)
		if spans[i].PN > 0 {
			for j, r := range p.reps {
				if samePrefix(int(r), i) {
					g = j
					break
				}
			}
		}
		if g == len(p.reps) {
			p.reps, p.sizes = append(p.reps, int32(i)), append(p.sizes, 0)
		}
		p.of[i] = int32(g)
		p.sizes[g]++
	}
	p.next = grow(p.next, len(p.reps))
	at := int32(0)
	for g, size := range p.sizes {
		p.next[g] = at
		at += size
	}
	for i, g := range p.of {
		p.order[p.next[g]] = int32(i)
		p.next[g]++
	}
	f := int32(0) // the gathering's first place in order
	for _, size := range p.sizes {
		members := p.order[f : f+size]
		group := false
		if shared && tile > 0 && len(members) > 1 {
			rows := 0
			for _, s := range members {
				rows += untiledRows(spans[s].Rows, tile)
			}
			group = rows*grp >= sharedMinRows
		}
		for kh := 0; kh < KVH; kh++ {
			if group {
				p.units = append(p.units, attnUnit{span: f, head: int32(kh), group: size})
			}
			for _, s := range members {
				rows := spans[s].Rows
				untiled := untiledRows(rows, tile)
				if !group && !p.rooted[s] {
					for r := 0; r < untiled; r++ {
						p.units = append(p.units, attnUnit{span: s, row: int32(r), head: int32(kh)})
					}
				}
				for r := untiled; r < rows; r += tile {
					p.units = append(p.units, attnUnit{span: s, row: int32(r), head: int32(kh), tile: int32(tile)})
				}
			}
		}
		f += size
	}
}

// CacheWrite implements Backend.
func (c *CPU[T]) CacheWrite(cache, src Tensor, kind KVKind, pos0, rows, KVH, hd, cap int) {
	s := c.s(src)
	need("CacheWrite cache", cache.Len(), KVH*cap*hd)
	need("CacheWrite src", len(s), rows*KVH*hd)
	if pos0 < 0 || pos0+rows > cap {
		panic(fmt.Sprintf("kernels: CacheWrite of positions %d..%d into a cache of %d", pos0, pos0+rows, cap))
	}
	if isBF16(cache) {
		cacheWriteBF16(opBF16s(cache), s, kind, pos0, rows, KVH, hd, cap)
		return
	}
	d := c.s(cache)
	for r := 0; r < rows; r++ {
		p := pos0 + r
		src := s[r*KVH*hd : (r+1)*KVH*hd]
		if kind == Values {
			for kh := 0; kh < KVH; kh++ {
				copy(d[kh*cap*hd+p*hd:kh*cap*hd+p*hd+hd], src[kh*hd:(kh+1)*hd])
			}
			continue
		}
		// Position p's dimensions sit w apart from kvAt(cap, hd, 0, p).
		at, w := kvAt(cap, hd, 0, p), kvWidth(cap, p)
		for kh := 0; kh < KVH; kh++ {
			head := d[kh*cap*hd+at : (kh+1)*cap*hd]
			for e, v := range src[kh*hd : (kh+1)*hd] {
				head[e*w] = v
			}
		}
	}
}

// CacheCopy implements Backend.
func (c *CPU[T]) CacheCopy(dst, src Tensor, kind KVKind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap int) {
	need("CacheCopy dst", dst.Len(), KVH*dstCap*hd)
	need("CacheCopy src", src.Len(), KVH*srcCap*hd)
	if n < 0 || dstPos < 0 || srcPos < 0 || dstPos+n > dstCap || srcPos+n > srcCap {
		panic(fmt.Sprintf("kernels: CacheCopy of positions %d..%d to %d..%d between caches of %d and %d", srcPos, srcPos+n, dstPos, dstPos+n, srcCap, dstCap))
	}
	switch db, sb := isBF16(dst), isBF16(src); {
	case db && sb:
		cacheCopy(opBF16s(dst), opBF16s(src), kind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap)
	case db || sb:
		panic("kernels: CacheCopy between a bfloat16 and a float cache")
	default:
		cacheCopy(c.s(dst), c.s(src), kind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap)
	}
}

// cacheCopy is CacheCopy on checked caches of any element type.
func cacheCopy[E any](d, s []E, kind KVKind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap int) {
	// Values, and whole key blocks at the same place in a block on both
	// sides, are one contiguous range a head; the rest of the keys goes
	// element by element.
	whole := n
	if kind == Keys {
		whole = 0
		if dstPos%kvBlock == 0 && srcPos%kvBlock == 0 {
			whole = min(n, (dstCap-dstPos)&^(kvBlock-1), (srcCap-srcPos)&^(kvBlock-1)) &^ (kvBlock - 1)
		}
	}
	for kh := 0; kh < KVH; kh++ {
		dh, sh := d[kh*dstCap*hd:(kh+1)*dstCap*hd], s[kh*srcCap*hd:(kh+1)*srcCap*hd]
		copy(dh[dstPos*hd:(dstPos+whole)*hd], sh[srcPos*hd:(srcPos+whole)*hd])
		for e := 0; e < hd; e++ {
			for p := whole; p < n; p++ {
				dh[kvAt(dstCap, hd, e, dstPos+p)] = sh[kvAt(srcCap, hd, e, srcPos+p)]
			}
		}
	}
}

// decodeChunk is how many of left query heads decode attention handles in
// one pass: 4, 2 or 1.
func decodeChunk(left int) int {
	switch {
	case left >= 4:
		return 4
	case left >= 2:
		return 2
	}
	return 1
}
