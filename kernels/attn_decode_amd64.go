package kernels

// attnScores4AVX2 is attnScores for four rows and the positions p < n8 (n8
// a positive multiple of 8, hd ≥ 1) of keys in blocks of 8 positions bs
// apart (kvAt), each sum one FMA chain in increasing d:
//
//	for i := 0; i < 4; i++ {
//		for p := 0; p < n8; p++ {
//			var acc float32
//			for d := 0; d < hd; d++ {
//				acc = fma(q[i*hd+d], k[p/8*bs+d*ldk+p%8], acc)
//			}
//			s[i*lds+p] = acc
//		}
//	}
//
//go:noescape
func attnScores4AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, bs, n8 int)

// attnScores2AVX2 is attnScores4AVX2 for two rows.
//
//go:noescape
func attnScores2AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, bs, n8 int)

// attnScores1AVX2 is attnScores4AVX2 for one row.
//
//go:noescape
func attnScores1AVX2(s *float32, q *float32, hd int, k *float32, ldk, bs, n8 int)

// attnScoresAsm runs the kernel for rows on the positions p < n8, bounds
// checked by the caller.
func attnScoresAsm(rows int, s []float32, lds int, q []float32, hd int, k []float32, ldk, bs, n8 int) {
	switch rows {
	case 4:
		attnScores4AVX2(&s[0], lds, &q[0], hd, &k[0], ldk, bs, n8)
	case 2:
		attnScores2AVX2(&s[0], lds, &q[0], hd, &k[0], ldk, bs, n8)
	default:
		attnScores1AVX2(&s[0], &q[0], hd, &k[0], ldk, bs, n8)
	}
}

// attnMix4AVX2 sets o[i*hd+d] (i < 4, d < hd, hd even) to the sum over
// p < n (n ≥ 1) of pr[i*ldp+p]·v[p/8*bs+d*ldv+p%8]: FMAs into 8 lane sums
// (lane p%8; the last n%8 positions through masked loads, which touch no
// memory past n), reduced as hsum8 does.
//
//go:noescape
func attnMix4AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, bs, hd, n int)

// attnMix2AVX2 is attnMix4AVX2 for two rows (hd a multiple of 4), with the
// same lanes and reduction.
//
//go:noescape
func attnMix2AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, bs, hd, n int)

// attnMix1AVX2 is attnMix4AVX2 for one row (hd a multiple of 8), with the
// same lanes and reduction.
//
//go:noescape
func attnMix1AVX2(o *float32, pr *float32, v *float32, ldv, bs, hd, n int)

func attnMixAsm(rows int, o []float32, pr []float32, ldp int, v []float32, ldv, bs, hd, n int) {
	switch rows {
	case 4:
		attnMix4AVX2(&o[0], &pr[0], ldp, &v[0], ldv, bs, hd, n)
	case 2:
		attnMix2AVX2(&o[0], &pr[0], ldp, &v[0], ldv, bs, hd, n)
	default:
		attnMix1AVX2(&o[0], &pr[0], &v[0], ldv, bs, hd, n)
	}
}

// prefetchRowsAsm asks the caches for rows rows of n floats, ld apart,
// from p; it reads nothing into registers and changes no memory.
//
//go:noescape
func prefetchRowsAsm(p *float32, ld, rows, n int)
