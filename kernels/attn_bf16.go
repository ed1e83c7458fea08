package kernels

import (
	"fmt"
	"math"
	"unsafe"
)

// Decode attention over KV caches held in bfloat16 (BF16KV). A cache keeps
// the float32 layout of attn_decode.go with every element rounded to
// bfloat16 (to nearest, ties to even) when it is written, so it takes half
// the memory and decode attention streams half the bytes. Where the
// assembly runs, the score and value-sum kernels read the bfloat16 keys
// and values directly, widening each in registers as they load it
// (attn_bf16_scores_amd64.s, attn_bf16_mix_amd64.s): the float32 kernels'
// FMA chains on the widened values. Elsewhere (and for the value sums of a
// head dimension that is no multiple of 8) a unit's keys and values are
// read a chunk of positions at a time, widened exactly into float32
// (widenBF16) in a buffer that stays in the core's L1 cache, and the
// float32 kernels run on it: scores are independent per position and every
// output's FMA chain continues across chunks in position order. Either
// way the result is bit for bit AttentionKV's over float32 caches holding
// the rounded values: the only difference from float32 caches is that
// rounding (relative 2^-9 a value).
//
// AVX-512 BF16's dot product (VDPBF16PS) is not used: it would round the
// queries to bfloat16 as well and sum pairs of products, neither of which
// the float32 path does; widening costs two instructions per 8 values and
// keeps the numerics (and the bits) of the float32 kernels.

// BF16KV is implemented by a backend whose KV caches may be bfloat16: a
// cache allocated with AllocBF16 then serves wherever a float cache does —
// CacheWrite rounds the values it stores to nearest even, CacheCopy copies
// them, AttentionKV reads them. The spans of one AttentionKV call are all
// bfloat16 or all float.
type BF16KV interface {
	// BF16KVCaches reports whether the backend takes bfloat16 caches.
	BF16KVCaches() bool
}

// BF16KVCaches implements BF16KV: the float32 CPU backend takes them.
func (c *CPU[T]) BF16KVCaches() bool { return c.scores != nil }

// widenBF16 sets dst[i] to src[i] widened exactly (FromBF16) for i <
// len(src), in vectors where the assembly runs.
func widenBF16(dst []float32, src []uint16) {
	n := len(src)
	if n == 0 {
		return
	}
	_ = dst[n-1]
	i := 0
	if useAsm {
		i = widenBF16Asm(dst, src)
	}
	for ; i < n; i++ {
		dst[i] = math.Float32frombits(uint32(src[i]) << 16)
	}
}

// isBF16 reports whether t's storage is bfloat16.
func isBF16(t Tensor) bool {
	_, ok := t.buf.([]uint16)
	return ok
}

// bf16ChunkElems is about how many elements of one head's keys or values
// the bfloat16 path widens at once: 16 KB of float32, well inside L1.
const bf16ChunkElems = 4096

// attentionKVBF16 is AttentionKV over bfloat16 caches (see above), with
// the same units, order and kernels.
func (c *CPU[T]) attentionKVBF16(o, qs []T, spans []KVSpan, H, KVH, hd int) {
	if c.scores == nil {
		panic(fmt.Sprintf("kernels: %s has no bfloat16 KV caches", c.name))
	}
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw := H * hd
	dc := c.getDecodeBuf(len(spans))
	defer c.putDecodeBuf(dc)
	ks, vs, pks, pvs := dc.ks16, dc.vs16, dc.pks16, dc.pvs16
	nu, maxN := 0, 0
	for i, sp := range spans {
		if !isBF16(sp.K) || !isBF16(sp.V) || (sp.PN > 0 && (!isBF16(sp.PK) || !isBF16(sp.PV))) {
			panic(fmt.Sprintf("kernels: AttentionKV span %d mixes bfloat16 and float caches", i))
		}
		ks[i], vs[i] = opBF16s(sp.K), opBF16s(sp.V)
		n := checkKVSpanPositions(i, sp)
		npk, npv := 0, 0
		if sp.PN > 0 {
			pks[i], pvs[i] = opBF16s(sp.PK), opBF16s(sp.PV)
			npk, npv = len(pks[i]), len(pvs[i])
		}
		checkKVSpanLengths(sp, len(ks[i]), len(vs[i]), npk, npv, len(qs), len(o), KVH, hd, qw)
		maxN = max(maxN, n)
		nu += sp.Rows * KVH
	}
	planUnits(&dc.plan, spans, pks, nil, nu, KVH, grp, 0, false)
	units := dc.plan.units
	// Positions a chunk: whole blocks of kvBlock.
	cpos := max(kvBlock, bf16ChunkElems/hd&^(kvBlock-1))
	Parallel(len(units), 1+(1<<16)/(1+4*maxN*hd*grp), func(lo, hi int) {
		nsc := grp * (maxN + kvBlock)
		sb := c.getDecodeScratch(nsc + cpos*hd)
		defer c.decodeScratch.Put(sb)
		sc := (*sb)[:nsc]
		wb, ok := any((*sb)[nsc:]).([]float32)
		if !ok {
			panic(fmt.Sprintf("kernels: %s has no bfloat16 KV caches", c.name))
		}
		scf := any(sc).([]float32)
		fused := useAsm // the assembly reads bfloat16 itself
		for j, un := range units[lo:hi] {
			s, r, kh := int(un.span), int(un.row), int(un.head)
			sp := spans[s]
			if c.prefetch != nil && lo+j+1 < hi && !sameCache(un, units[lo+j+1]) {
				nx := units[lo+j+1]
				ns := spans[nx.span]
				np := ns.Pos0 + int(nx.row) + 1 - ns.PN
				at, m := int(nx.head)*hd*ns.Cap, min(ns.Cap, (np+kvBlock-1)&^(kvBlock-1))*hd
				prefetchBF16(ks[nx.span][at:], m)
				prefetchBF16(vs[nx.span][at:], m)
			}
			row, n, cp, pn, pcp := sp.QRow+r, sp.Pos0+r+1, sp.Cap, sp.PN, sp.PCap
			qg := qs[row*qw+kh*grp*hd : row*qw+(kh+1)*grp*hd]
			og := o[row*qw+kh*grp*hd : row*qw+(kh+1)*grp*hd]
			kt, vt := ks[s][kh*hd*cp:(kh+1)*hd*cp], vs[s][kh*hd*cp:(kh+1)*hd*cp]
			var pkt, pvt []uint16
			if pn > 0 {
				pkt, pvt = pks[s][kh*hd*pcp:(kh+1)*hd*pcp], pvs[s][kh*hd*pcp:(kh+1)*hd*pcp]
			}
			ldn := (n + kvBlock - 1) &^ (kvBlock - 1)
			// Scores of the prefix cache's positions, then of the
			// sequence's own, a chunk of positions at a time; a chunk of
			// capacity e-a has the layout of the cache from position a.
			score := func(k16 []uint16, cap, npos, base int) {
				if fused {
					qf := any(qg).([]float32)
					for g := 0; g < grp; {
						rows := decodeChunk(grp - g)
						attnScoresBF16(rows, scf[g*ldn+base:], ldn, qf[g*hd:(g+rows)*hd], hd, k16, cap, npos, wb)
						g += rows
					}
					return
				}
				for a := 0; a < npos; a += cpos {
					e, m := min(a+cpos, cap), min(cpos, npos-a)
					kb := wb[:(e-a)*hd]
					widenBF16(kb, k16[a*hd:e*hd])
					kf := any(kb).([]T)
					for g := 0; g < grp; {
						rows := decodeChunk(grp - g)
						c.scores(rows, sc[g*ldn+base+a:], ldn, qg[g*hd:(g+rows)*hd], hd, kf, e-a, m)
						g += rows
					}
				}
			}
			if pn > 0 {
				score(pkt, pcp, pn, 0)
			}
			score(kt, cp, n-pn, pn)
			negInf := T(math.Inf(-1))
			var sums [kvBlock * 8]T
			sum := sums[:0]
			if grp > len(sums) {
				sum = make([]T, 0, grp)
			}
			for g := 0; g < grp; g++ {
				row := sc[g*ldn : g*ldn+ldn]
				for p := n; p < ldn; p++ {
					row[p] = negInf
				}
				sum = append(sum, c.softExp(row, scale))
			}
			// The values of every position in order, prefix first, a
			// chunk at a time: one FMA chain an output.
			clear(og)
			mix := func(v16 []uint16, npos, base int) {
				if fused && hd%8 == 0 {
					of := any(og).([]float32)
					for g := 0; g < grp; {
						rows := decodeChunk(grp - g)
						attnMixBF16(rows, of[g*hd:(g+rows)*hd], scf[g*ldn+base:], ldn, v16, hd, npos)
						g += rows
					}
					return
				}
				for a := 0; a < npos; a += cpos {
					m := min(cpos, npos-a)
					vb := wb[:m*hd]
					widenBF16(vb, v16[a*hd:(a+m)*hd])
					vf := any(vb).([]T)
					for g := 0; g < grp; {
						rows := decodeChunk(grp - g)
						c.mix(rows, og[g*hd:(g+rows)*hd], sc[g*ldn+base+a:], ldn, vf, hd, m)
						g += rows
					}
				}
			}
			if pn > 0 {
				mix(pvt, pn, 0)
			}
			mix(vt, n-pn, pn)
			for g := 0; g < grp; g++ {
				inv := 1 / sum[g]
				for j := range og[g*hd : g*hd+hd] {
					og[g*hd+j] *= inv
				}
			}
		}
	})
}

// attnScoresBF16 is attnScores over bfloat16 keys k (cap·hd elements)
// where the assembly runs: whole blocks of 8 positions read in place, the
// last positions' block widened into wb first and scored by attnScores,
// as a cache of its own (the same FMA chains either way). It panics if a
// slice is too short.
func attnScoresBF16(rows int, s []float32, lds int, q []float32, hd int, k []uint16, cap, n int, wb []float32) {
	if n <= 0 {
		return
	}
	if n > cap {
		panic(fmt.Sprintf("kernels: attention scores over %d positions of a cache of %d", n, cap))
	}
	_ = s[(rows-1)*lds+n-1]
	_ = q[rows*hd-1]
	_ = k[cap*hd-1]
	n8 := min(n, cap&^(kvBlock-1)) &^ (kvBlock - 1)
	if n8 > 0 {
		attnScoresBF16Asm(rows, s, lds, q, hd, k, kvBlock, kvBlock*hd, n8)
	}
	if n8 < n {
		e := min(cap, n8+kvBlock)
		kb := wb[:(e-n8)*hd]
		widenBF16(kb, k[n8*hd:e*hd])
		attnScores(rows, s[n8:], lds, q, hd, kb, e-n8, n-n8)
	}
}

// attnMixBF16 is attnMix over bfloat16 values v (n·hd elements at least)
// where the assembly runs and hd is a multiple of 8. It panics if a slice
// is too short.
func attnMixBF16(rows int, o []float32, pr []float32, ldp int, v []uint16, hd, n int) {
	if n <= 0 {
		return
	}
	_ = o[rows*hd-1]
	_ = pr[(rows-1)*ldp+n-1]
	_ = v[n*hd-1]
	attnMixBF16Asm(rows, o, pr, ldp, v, hd, n)
}

// prefetchBF16 asks the caches for the first n bfloat16 elements of p (as
// prefetchRows does for floats).
func prefetchBF16(p []uint16, n int) {
	if n <= 1 || !useAsm {
		return
	}
	_ = p[n-1]
	prefetchRowsAsm((*float32)(unsafe.Pointer(&p[0])), n/2, 1, n/2)
}

// cacheWriteBF16 is CacheWrite into a bfloat16 cache d: each value of s
// rounded to nearest even (ToBF16).
func cacheWriteBF16[T Float](d []uint16, s []T, kind KVKind, pos0, rows, KVH, hd, cap int) {
	for r := 0; r < rows; r++ {
		p := pos0 + r
		src := s[r*KVH*hd : (r+1)*KVH*hd]
		if kind == Values {
			for kh := 0; kh < KVH; kh++ {
				dst := d[kh*cap*hd+p*hd : kh*cap*hd+p*hd+hd]
				for e, v := range src[kh*hd : (kh+1)*hd] {
					dst[e] = bf16FromFloat(float32(v))
				}
			}
			continue
		}
		at, w := kvAt(cap, hd, 0, p), kvWidth(cap, p)
		for kh := 0; kh < KVH; kh++ {
			head := d[kh*cap*hd+at : (kh+1)*cap*hd]
			for e, v := range src[kh*hd : (kh+1)*hd] {
				head[e*w] = bf16FromFloat(float32(v))
			}
		}
	}
}
