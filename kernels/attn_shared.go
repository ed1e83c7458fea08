package kernels

import "math"

// The samples of one prompt decode side by side (the engine's k = 8
// evaluation, a vote's samples), each reading the prompt's positions from
// one shared prefix cache and then its own. For the prefix the rows of all
// of them are one matrix product each for the scores and the value sums,
// which the AVX-512 GEMM tiles (kern12x32, kern4x32) run where the decode
// kernels (attn_decode.go) compute a row, or a pair of query heads, at a
// time. In a decoding batch the prefix is most of what a row reads: the
// prompt, against the few positions a sample has generated.
//
// The tiles give every row the bits of the decode path, as promptRows
// does (attn_prompt.go): a prefix score is one FMA chain over the head's
// dimensions from zero (kern12x32's chain over k = hd), a row's own scores
// come from the decode kernel itself, and the softmax is the decode
// path's over the same whole vectors of positions; the value sums over
// the prefix are one FMA chain over its positions from zero (kern12x32
// over k = pn), which the decode kernel then continues over the row's own
// positions, as it continues its own chain over the prefix. So a row's
// output does not depend on which samples of its prompt it decodes
// beside (TestSharedPrefixRowsMatchAlone).

// sharedMinRows is the fewest query rows (rows of the spans × query heads
// of a KV head) a run of spans sharing a prefix needs for AttentionKV to
// compute them together: one whole twelve-row tile. With fewer the decode
// kernels, reading the prefix from L2 after the first span, were as fast
// or faster than transposing the prefix's keys for the tiles
// (BenchmarkCPUAttentionKVDecodeGroups: 2 to 4 samples of a prompt at
// the base model's heads, 4 to 8 rows, no gain; 6 and 8 samples 1.4×).
const sharedMinRows = 12

// sharedState is one worker's scratch for a run of spans sharing a
// prefix: the prefix's keys of one KV head transposed to dimension-major
// rows of pn positions, the gathered query rows (padded to whole tiles of
// four), their scores and softmax sums (rows ld apart), and the prefix's
// value sums.
type sharedState struct {
	kt, q, s, ob, sums []float32
	runs               []rootRun // rootRows's
}

// untiledRows is how many of a span's rows AttentionKV computes one at a
// time (or, in a run sharing a prefix, together): with prompt tiles of
// tile rows, the first rows%tile of a span of at least tile rows.
func untiledRows(rows, tile int) int {
	if tile > 0 && rows >= tile {
		return rows % tile
	}
	return rows
}

// kvTransposeBlocks sets dst[d*ld+p] to dimension d of position p of one
// head's key cache src for the positions of its first blocks whole blocks
// of kvBlock (kvAt: a block's dimensions are kvBlock apart).
func kvTransposeBlocks(dst []float32, ld int, src []float32, hd, blocks int) {
	if blocks <= 0 {
		return
	}
	_ = src[blocks*kvBlock*hd-1]
	_ = dst[(hd-1)*ld+blocks*kvBlock-1]
	if useAsm && hd%4 == 0 {
		kvTransposeBlocksAVX2(&dst[0], ld, &src[0], hd, blocks)
		return
	}
	for b := 0; b < blocks; b++ {
		for d := 0; d < hd; d++ {
			copy(dst[d*ld+b*kvBlock:d*ld+(b+1)*kvBlock], src[(b*hd+d)*kvBlock:])
		}
	}
}

// tileKern is the GEMM tile for the next rows of left (a multiple of 4)
// and how many rows it takes: twelve while that many are left, then four.
func tileKern(left int) (func(kc int, a []float32, rsa, csa int, b []float32, boff, ldb int, c []float32, ldc int, add bool), int) {
	if left >= 12 {
		return kern12x32, 12
	}
	return kern4x32, 4
}

// sharedRows computes AttentionKV's outputs for KV head kh and its grp
// query heads of the untiled rows (untiledRows) of the spans members,
// which share one prefix cache (pk, pv: all heads): the
// prefix's scores and value sums as tiles over all the rows, each row's
// own positions with the decode kernels. ks and vs are the spans' own
// caches, o and qs the call's outputs and queries (qw elements a row).
func sharedRows(st *sharedState, o, qs []float32, spans []KVSpan, members []int32, tile int, ks, vs [][]float32, pk, pv []float32, kh, grp, hd, qw int, scale float32) {
	sp0 := spans[members[0]]
	pn, pcp := sp0.PN, sp0.PCap
	rows, ld := 0, pn
	for _, m := range members {
		sp := spans[m]
		if u := untiledRows(sp.Rows, tile); u > 0 {
			rows += u * grp
			ld = max(ld, sp.Pos0+u)
		}
	}
	ld = roundUp(ld, 32) // whole vectors of any row's positions, and the prefix's whole 32-column tiles
	rows4 := roundUp(rows, 4)
	// Rows of the transposed keys a cache line longer than the prefix:
	// at a power-of-two stride (pn a multiple of 128, say) the stores
	// of a block's dimensions would all fall in a few of L1's sets.
	ldk := pn + 16
	st.kt = grow(st.kt, hd*ldk)
	st.q = grow(st.q, rows4*hd)
	st.s = grow(st.s, rows4*ld)
	st.ob = grow(st.ob, rows4*hd)
	st.sums = grow(st.sums, rows)
	kvTransposeBlocks(st.kt, ldk, pk[kh*hd*pcp:(kh+1)*hd*pcp], hd, pn/kvBlock)
	x := 0
	for _, m := range members {
		sp := spans[m]
		for r := range untiledRows(sp.Rows, tile) {
			copy(st.q[x*hd:(x+grp)*hd], qs[(sp.QRow+r)*qw+kh*grp*hd:])
			x += grp
		}
	}
	clear(st.q[rows*hd : rows4*hd]) // padding rows: finite scores, outputs dropped
	// The prefix's scores, twelve rows a tile, then four.
	for t := 0; t < rows4; {
		kern, tr := tileKern(rows4 - t)
		for j := 0; j < pn; j += 32 {
			kern(hd, st.q[t*hd:], hd, 1, st.kt[j:], 16, ldk, st.s[t*ld+j:], ld, false)
		}
		t += tr
	}
	// Each row's own scores and the softmax, as the decode path does them.
	negInf := float32(math.Inf(-1))
	x = 0
	for _, m := range members {
		sp, cp := spans[m], spans[m].Cap
		kt := ks[m][kh*hd*cp : (kh+1)*hd*cp]
		for r := range untiledRows(sp.Rows, tile) {
			n := sp.Pos0 + r + 1
			ldn := (n + kvBlock - 1) &^ (kvBlock - 1)
			for g := 0; g < grp; {
				c := decodeChunk(grp - g)
				attnScores(c, st.s[(x+g)*ld+pn:], ld, st.q[(x+g)*hd:], hd, kt, cp, n-pn)
				g += c
			}
			for g := 0; g < grp; g++ {
				row := st.s[(x+g)*ld : (x+g)*ld+ldn]
				for p := n; p < ldn; p++ {
					row[p] = negInf
				}
				st.sums[x+g] = softExp(row, scale)
			}
			x += grp
		}
	}
	// The prefix's value sums, tiles as the scores.
	pvt := pv[kh*hd*pcp : (kh+1)*hd*pcp]
	for t := 0; t < rows4; {
		kern, tr := tileKern(rows4 - t)
		for j := 0; j < hd; j += 32 {
			kern(pn, st.s[t*ld:], ld, 1, pvt[j:], 16, hd, st.ob[t*hd+j:], hd, false)
		}
		t += tr
	}
	// Each row's own values continue its chain; then the division by the
	// softmax's sum.
	x = 0
	for _, m := range members {
		sp, cp := spans[m], spans[m].Cap
		vt := vs[m][kh*hd*cp : (kh+1)*hd*cp]
		for r := range untiledRows(sp.Rows, tile) {
			n := sp.Pos0 + r + 1
			og := o[(sp.QRow+r)*qw+kh*grp*hd:][:grp*hd]
			copy(og, st.ob[x*hd:(x+grp)*hd])
			for g := 0; g < grp; {
				c := decodeChunk(grp - g)
				attnMix(c, og[g*hd:], st.s[(x+g)*ld+pn:], ld, vt, hd, n-pn)
				g += c
			}
			for g := 0; g < grp; g++ {
				inv := 1 / st.sums[x+g]
				out := og[g*hd : g*hd+hd]
				for j := range out {
					out[j] *= inv
				}
			}
			x += grp
		}
	}
}
