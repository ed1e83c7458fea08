package kernels

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
// which share one prefix cache (pk, pv: all heads): the prefix's scores
// and value sums as tiles over all the rows, each row's own positions
// with the decode kernels. ks, vs, pks and pvs are the spans' caches, o
// and qs the call's outputs and queries (qw elements a row). A prefix
// cache is its spans' root over its whole length: rootRows.
func sharedRows(st *sharedState, o, qs []float32, spans []KVSpan, members []int32, tile int, ks, vs, pks, pvs [][]float32, pk, pv []float32, kh, grp, hd, qw int, scale float32) {
	sp := spans[members[0]]
	rootRows(st, o, qs, spans, members, tile, ks, vs, pks, pvs, pk, pv, sp.PCap, sp.PN, kh, grp, hd, qw, scale)
}
