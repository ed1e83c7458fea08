package kernels

import "fmt"

// Decode attention reads the CPU backend's KV caches. The keys of one KV
// head over a capacity of cap positions take cap·hd elements, stored block
// by block: positions in blocks of 8, a whole block's hd·8 elements
// together with dimension d of its positions at d·8 (kvAt), and the last
// cap%8 positions, if any, dimension-major in the last (cap%8)·hd. The
// values are stored position by position (position p's hd elements at
// p·hd). Either way a unit that reads every cached position of a head
// reads one contiguous range, in order: a stream the hardware prefetchers
// follow (docs/PERFORMANCE.md, sessions 16 and 17).
//
// The query heads that share a KV head (grouped-query attention) are
// scored and mixed together, as small matrix products over every cached
// position: scores S[rows, n] = Q[rows, hd]·K[hd, n] with the positions
// along the vector lanes, outputs O[rows, hd] = P[rows, n]·V[n, hd] with
// the dimensions along them, in chunks of 4, 2 or 1 rows. One pass over the
// cache serves a whole chunk (each key or value vector loaded feeds one FMA
// per row), and neither sum needs a reduction across lanes.
//
// Every score is one FMA chain over d in increasing order, and every
// output one FMA chain over p in increasing order, whatever the chunk
// size: a row's results never depend on the rows beside it, nor on the
// group size.

// kvBlock is how many positions a block of a CPU KV cache holds.
const kvBlock = 8

// kvAt returns where dimension d of position p sits in one KV head's cache
// of capacity cap and head dimension hd.
func kvAt(cap, hd, d, p int) int {
	b := p &^ (kvBlock - 1)
	return b*hd + d*kvWidth(cap, p) + p - b
}

// kvWidth is how many positions the block holding position p has in a
// cache of capacity cap: kvBlock but in a narrower last block, and the
// distance between a position's consecutive dimensions.
func kvWidth(cap, p int) int { return min(kvBlock, cap-p&^(kvBlock-1)) }

// kvGather copies positions from ≤ p < n of one head's cache src
// (capacity cap) into dst laid out as a cache of whole blocks holding
// positions from.. (dst has a multiple of kvBlock·hd elements): what the
// kernels read in place of a cache's narrower last block.
func kvGather(dst, src []float32, cap, hd, from, n int) {
	dcap := len(dst) / hd
	for d := 0; d < hd; d++ {
		for p := from; p < n; p++ {
			dst[kvAt(dcap, hd, d, p-from)] = src[kvAt(cap, hd, d, p)]
		}
	}
}

// attnScores sets s[i*lds+p] = Σ_d q[i*hd+d]·k[kvAt(cap, hd, d, p)] for the
// query rows i < rows (1, 2 or 4) and positions p < n ≤ cap of one head's
// cache k (cap·hd elements), each sum in increasing d. It panics if a
// slice is too short.
func attnScores(rows int, s []float32, lds int, q []float32, hd int, k []float32, cap, n int) {
	if n <= 0 {
		return
	}
	if n > cap {
		panic(fmt.Sprintf("kernels: attention scores over %d positions of a cache of %d", n, cap))
	}
	_ = s[(rows-1)*lds+n-1]
	_ = q[rows*hd-1]
	_ = k[cap*hd-1]
	if !useAsm {
		attnScoresGo(rows, s, lds, q, hd, k, cap, 0, n)
		return
	}
	n8 := min(n, cap&^(kvBlock-1)) &^ (kvBlock - 1)
	if n8 > 0 {
		attnScoresAsm(rows, s, lds, q, hd, k, kvBlock, kvBlock*hd, n8)
	}
	if n8 < n {
		// The last positions: their whole block scored apart (the scores
		// past n dropped), or, in the cache's last, narrower block,
		// gathered into a block of 8 first; either way they get the FMA
		// chains of positions of a whole block.
		var sb [4 * kvBlock]float32
		sp := sb[:]
		if rows > 4 {
			sp = make([]float32, kvBlock*rows)
		}
		kp := k[n8*hd:]
		if n8+kvBlock > cap {
			kp = make([]float32, kvBlock*hd)
			kvGather(kp, k, cap, hd, n8, n)
		}
		attnScoresAsm(rows, sp, kvBlock, q, hd, kp, kvBlock, 0, kvBlock)
		for i := 0; i < rows; i++ {
			copy(s[i*lds+n8:i*lds+n], sp[i*kvBlock:i*kvBlock+n-n8])
		}
	}
}

// attnScoresGo is attnScores for positions p0 ≤ p < n, in plain Go.
func attnScoresGo(rows int, s []float32, lds int, q []float32, hd int, k []float32, cap, p0, n int) {
	for i := 0; i < rows; i++ {
		qi := q[i*hd : i*hd+hd]
		for p := p0; p < n; p++ {
			var acc float32
			for d, x := range qi {
				acc += x * k[kvAt(cap, hd, d, p)]
			}
			s[i*lds+p] = acc
		}
	}
}

// softExp replaces row by e^(scale·row − m), m the largest of scale·row,
// and returns their sum: decode attention's probabilities before they are
// normalised. A row whose length is a multiple of 8 (every row decode
// attention hands it: whole vectors of positions) runs in one kernel
// (softExpAsm: both passes over the row, which stays in L1, in one call);
// any row gives the bits of scaleMax then expSub.
func softExp(row []float32, scale float32) float32 {
	if n := len(row); useAsm && n > 0 && n%8 == 0 {
		return softExpAsm(row, scale)
	}
	return expSub(row, scaleMax(row, scale))
}

// attnMix adds to o[i*hd+d] the sum over positions p < n of
// pr[i*ldp+p]·v[p*hd+d], for the rows i < rows (1, 2 or 4) of
// probabilities and the dimensions d < hd: the attention outputs of a
// chunk of query heads from one head's values v, stored position by
// position (n·hd elements at least). Each output is one FMA chain over p
// in increasing order continued from the value o holds, so mixing a
// prefix cache's positions and then a sequence's own gives the chain over
// all of them. It panics if a slice is too short.
func attnMix(rows int, o []float32, pr []float32, ldp int, v []float32, hd, n int) {
	if hd <= 0 || n <= 0 {
		return
	}
	_ = o[rows*hd-1]
	_ = pr[(rows-1)*ldp+n-1]
	_ = v[n*hd-1]
	if useAsm && hd%8 == 0 {
		attnMixAsm(rows, o, pr, ldp, v, hd, n)
		return
	}
	attnMixGo(rows, o, pr, ldp, v, hd, n)
}

// attnMixGo is attnMix in plain Go, for a head dimension the assembly
// does not tile (hd%8 > 0) and where there is none: every row count takes
// the same path for a given hd, so a row's result never depends on its
// chunk.
func attnMixGo(rows int, o []float32, pr []float32, ldp int, v []float32, hd, n int) {
	for i := 0; i < rows; i++ {
		oi, pi := o[i*hd:i*hd+hd], pr[i*ldp:i*ldp+n]
		for d := range oi {
			acc := oi[d]
			for p, x := range pi {
				acc += x * v[p*hd+d]
			}
			oi[d] = acc
		}
	}
}

// prefetchRows asks the caches for rows rows of n floats, ld apart, from
// p: decode attention's keys and values for the unit it computes next. It
// changes nothing, and panics, like a load, for a row past p's end.
func prefetchRows(p []float32, ld, rows, n int) {
	if rows <= 0 || n <= 0 {
		return
	}
	_ = p[(rows-1)*ld+n-1]
	if useAsm {
		prefetchRowsAsm(&p[0], ld, rows, n)
	}
}
