package kernels

// Decode attention reads a dimension-major KV cache (see AttentionKV): for
// one KV head, k[d*ldk+p] is dimension d of the key at position p. The
// query heads that share a KV head (grouped-query attention) are scored and
// mixed together, as small matrix products over every cached position:
// scores S[rows, n] = Q[rows, hd]·K[hd, n], outputs O[rows, hd] =
// P[rows, n]·V[hd, n]ᵀ, in chunks of 4, 2 or 1 rows. One pass over the
// cache serves a whole chunk (each key or value vector loaded feeds one FMA
// per row), instead of a separate axpy (or dot) per head and dimension
// re-reading the cache and the scores.
//
// Every score is one FMA chain over d in increasing order, and every
// output one set of eight lane sums over p (lane p%8, the last n%8
// positions masked) reduced as hsum8 does, whatever the chunk size: a
// row's results never depend on the rows beside it, nor on the group size.

// attnScores sets s[i*lds+p] = Σ_d q[i*hd+d]·k[d*ldk+p] for the query rows
// i < rows (1, 2 or 4) and positions p < n, each sum in increasing d. It
// panics if a slice is too short.
func attnScores(rows int, s []float32, lds int, q []float32, hd int, k []float32, ldk, n int) {
	if n <= 0 {
		return
	}
	_ = s[(rows-1)*lds+n-1]
	_ = q[rows*hd-1]
	_ = k[(hd-1)*ldk+n-1]
	if !useAsm {
		attnScoresGo(rows, s, lds, q, hd, k, ldk, 0, n)
		return
	}
	if n < 8 {
		// Too few positions for the kernel: pad them to 8 so that they get
		// the same FMA chains as positions of a longer run. A row's scores
		// then do not depend on how its positions are split between caches
		// (kernels.KVSpan's prefix).
		var kb [8 * 256]float32
		var sb [4 * 8]float32
		kp := kb[:8*hd]
		if hd > 256 || rows > 4 {
			kp = make([]float32, 8*hd)
		}
		for d := 0; d < hd; d++ {
			copy(kp[d*8:d*8+n], k[d*ldk:d*ldk+n])
		}
		sp := sb[:]
		if rows > 4 {
			sp = make([]float32, 8*rows)
		}
		attnScoresAsm(rows, sp, 8, q, hd, kp, 8, 0, 8)
		for i := 0; i < rows; i++ {
			copy(s[i*lds:i*lds+n], sp[i*8:i*8+n])
		}
		return
	}
	n8 := n &^ 7
	attnScoresAsm(rows, s, lds, q, hd, k, ldk, 0, n8)
	if n8 < n {
		// The last 8 positions again: a position's score is the same FMA
		// chain whichever block computes it, so the overlap rewrites the
		// same bits.
		attnScoresAsm(rows, s, lds, q, hd, k, ldk, n-8, 8)
	}
}

// attnScoresGo is attnScores for positions p0 ≤ p < n, in plain Go.
func attnScoresGo(rows int, s []float32, lds int, q []float32, hd int, k []float32, ldk, p0, n int) {
	for i := 0; i < rows; i++ {
		qi := q[i*hd : i*hd+hd]
		for p := p0; p < n; p++ {
			var acc float32
			for d, x := range qi {
				acc += x * k[d*ldk+p]
			}
			s[i*lds+p] = acc
		}
	}
}

// mixDims is how many dimensions the assembly mix of a chunk of rows
// handles at once (eight FMA chains); hd must be a multiple of it.
func mixDims(rows int) int { return 8 / rows }

// attnMix sets o[i*hd+d] = Σ_p pr[i*ldp+p]·v[d*ldv+p] for the rows i <
// rows (1, 2 or 4) of probabilities over positions p < n and dimensions d
// < hd: the attention outputs of a chunk of query heads from one head's
// values. It panics if a slice is too short.
func attnMix(rows int, o []float32, pr []float32, ldp int, v []float32, ldv, hd, n int) {
	if hd <= 0 {
		return
	}
	_ = o[rows*hd-1]
	if n > 0 {
		_ = pr[(rows-1)*ldp+n-1]
		_ = v[(hd-1)*ldv+n-1]
	}
	if useAsm && hd%mixDims(rows) == 0 && n > 0 {
		attnMixAsm(rows, o, pr, ldp, v, ldv, hd, n)
		return
	}
	clear(o[:rows*hd])
	attnMixGo(rows, o, pr, ldp, v, ldv, hd, 0, n)
}

// attnMixGo adds the terms p0 ≤ p < n of attnMix into o, in plain Go.
func attnMixGo(rows int, o []float32, pr []float32, ldp int, v []float32, ldv, hd, p0, n int) {
	if p0 >= n {
		return
	}
	for i := 0; i < rows; i++ {
		pi := pr[i*ldp+p0 : i*ldp+n]
		for d := 0; d < hd; d++ {
			vd := v[d*ldv+p0 : d*ldv+n]
			acc := o[i*hd+d]
			for p, x := range pi {
				acc += x * vd[p]
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
