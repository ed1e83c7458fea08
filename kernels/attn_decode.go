package kernels

import "fmt"

// Decode attention reads the CPU backend's KV caches. The keys (or values)
// of one KV head over a capacity of cap positions take cap·hd elements,
// stored block by block: positions in blocks of 8, a whole block's hd·8
// elements together with dimension d of its positions at d·8 (kvAt), and
// the last cap%8 positions, if any, dimension-major in the last
// (cap%8)·hd. A unit that reads every cached position of a head so reads
// one contiguous range, in order: a stream the hardware prefetchers
// follow, where a dimension-major cache is hd short streams, one per
// dimension, which they do not (docs/PERFORMANCE.md, session 16).
//
// The query heads that share a KV head (grouped-query attention) are
// scored and mixed together, as small matrix products over every cached
// position: scores S[rows, n] = Q[rows, hd]·K[hd, n], outputs O[rows, hd] =
// P[rows, n]·V[hd, n]ᵀ, in chunks of 4, 2 or 1 rows. One pass over the
// cache serves a whole chunk (each key or value vector loaded feeds one FMA
// per row), instead of a separate axpy (or dot) per head and dimension
// re-reading the cache and the scores.
//
// Every score is one FMA chain over d in increasing order, and every
// output one set of eight lane sums over p (lane p%8, the last n%8
// positions masked) reduced as hsum8 does, whatever the chunk size: a
// row's results never depend on the rows beside it, nor on the group size.

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

// mixDims is how many dimensions the assembly mix of a chunk of rows
// handles at once (eight FMA chains); hd must be a multiple of it.
func mixDims(rows int) int { return 8 / rows }

// attnMix sets o[i*hd+d] = Σ_p pr[i*ldp+p]·v[kvAt(cap, hd, d, p)] for the
// rows i < rows (1, 2 or 4) of probabilities over positions p < n ≤ cap and
// dimensions d < hd: the attention outputs of a chunk of query heads from
// one head's values v (cap·hd elements). It panics if a slice is too
// short.
func attnMix(rows int, o []float32, pr []float32, ldp int, v []float32, cap, hd, n int) {
	if hd <= 0 {
		return
	}
	if n > cap {
		panic(fmt.Sprintf("kernels: attention values over %d positions of a cache of %d", n, cap))
	}
	_ = o[rows*hd-1]
	if n > 0 {
		_ = pr[(rows-1)*ldp+n-1]
		_ = v[cap*hd-1]
	}
	if useAsm && hd%mixDims(rows) == 0 && n > 0 {
		if n > cap&^(kvBlock-1) {
			// The positions reach the cache's last, narrower block: the
			// values gathered into whole blocks first, so that the masked
			// last block is read as every other one.
			vb := make([]float32, (n+kvBlock-1)&^(kvBlock-1)*hd)
			kvGather(vb, v, cap, hd, 0, n)
			v = vb
		}
		attnMixAsm(rows, o, pr, ldp, v, kvBlock, kvBlock*hd, hd, n)
		return
	}
	clear(o[:rows*hd])
	attnMixGo(rows, o, pr, ldp, v, cap, hd, 0, n)
}

// attnMixGo adds the terms p0 ≤ p < n of attnMix into o, in plain Go.
func attnMixGo(rows int, o []float32, pr []float32, ldp int, v []float32, cap, hd, p0, n int) {
	if p0 >= n {
		return
	}
	for i := 0; i < rows; i++ {
		pi := pr[i*ldp+p0 : i*ldp+n]
		for d := 0; d < hd; d++ {
			acc := o[i*hd+d]
			for j, x := range pi {
				acc += x * v[kvAt(cap, hd, d, p0+j)]
			}
			o[i*hd+d] = acc
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
