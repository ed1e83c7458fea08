package kernels

// Decode attention reads a dimension-major KV cache (see AttentionKV): for
// one KV head, k[d*ldk+p] is dimension d of the key at position p. When
// query heads share the KV head in groups of four (grouped-query
// attention), one pass over the cache serves all four: each key vector
// loaded feeds four FMAs, instead of a separate axpy (or dot) per head and
// dimension re-reading the cache and the scores.

// attnScores4 sets s[i*lds+p] = Σ_d q[i*hd+d]·k[d*ldk+p] for the four
// query rows i < 4 and positions p < n, each sum in increasing d. It
// panics if a slice is too short.
func attnScores4(s []float32, lds int, q []float32, hd int, k []float32, ldk, n int) {
	if n <= 0 {
		return
	}
	_ = s[3*lds+n-1]
	_ = q[4*hd-1]
	_ = k[(hd-1)*ldk+n-1]
	if !useAsm || n < 8 {
		attnScores4Go(s, lds, q, hd, k, ldk, 0, n)
		return
	}
	n8 := n &^ 7
	attnScores4AVX2(&s[0], lds, &q[0], hd, &k[0], ldk, n8)
	if n8 < n {
		// The last 8 positions again: a position's score is the same FMA
		// chain whichever block computes it, so the overlap rewrites the
		// same bits.
		attnScores4AVX2(&s[n-8], lds, &q[0], hd, &k[n-8], ldk, 8)
	}
}

// attnScores4Go is attnScores4 for positions p0 ≤ p < n, in plain Go.
func attnScores4Go(s []float32, lds int, q []float32, hd int, k []float32, ldk, p0, n int) {
	for i := 0; i < 4; i++ {
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

// attnMix4 sets o[i*hd+d] = Σ_p pr[i*ldp+p]·v[d*ldv+p] for the four rows
// i < 4 of probabilities over positions p < n and dimensions d < hd: the
// attention outputs of four query heads from one head's values. It panics
// if a slice is too short.
func attnMix4(o []float32, pr []float32, ldp int, v []float32, ldv, hd, n int) {
	if hd <= 0 {
		return
	}
	_ = o[4*hd-1]
	if n > 0 {
		_ = pr[3*ldp+n-1]
		_ = v[(hd-1)*ldv+n-1]
	}
	if useAsm && hd%2 == 0 && n > 0 {
		attnMix4AVX2(&o[0], &pr[0], ldp, &v[0], ldv, hd, n)
		return
	}
	clear(o[:4*hd])
	attnMix4Go(o, pr, ldp, v, ldv, hd, 0, n)
}

// attnMix4Go adds the terms p0 ≤ p < n of attnMix4 into o, in plain Go.
func attnMix4Go(o []float32, pr []float32, ldp int, v []float32, ldv, hd, p0, n int) {
	if p0 >= n {
		return
	}
	for i := 0; i < 4; i++ {
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
