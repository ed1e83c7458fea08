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

// The value-sum kernels (attn_mix_amd64.s): tiles of rows × columns of
// attnMix over n positions, each output an FMA chain continued from o:
//
//	for i := 0; i < rows; i++ {
//		for j := 0; j < cols; j++ {
//			acc := o[i*ldo+j]
//			for p := 0; p < n; p++ {
//				acc = fma(pr[i*ldp+p], v[p*ldv+j], acc)
//			}
//			o[i*ldo+j] = acc
//		}
//	}

//go:noescape
func attnMixV4x16AVX2(o *float32, ldo int, pr *float32, ldp int, v *float32, ldv int, n int)

//go:noescape
func attnMixV2x32AVX2(o *float32, ldo int, pr *float32, ldp int, v *float32, ldv int, n int)

//go:noescape
func attnMixV1x64AVX2(o *float32, ldo int, pr *float32, ldp int, v *float32, ldv int, n int)

//go:noescape
func attnMixV1x32AVX2(o *float32, ldo int, pr *float32, ldp int, v *float32, ldv int, n int)

//go:noescape
func attnMixV1x8AVX2(o *float32, ldo int, pr *float32, ldp int, v *float32, ldv int, n int)

// attnMixAsm runs attnMix's sums for rows (1, 2 or 4) over all hd
// columns (a multiple of 8), bounds checked by the caller: the widest
// tile for the rows first, what is left of the columns in narrower ones.
// Every output is the same FMA chain whichever tile computes it.
func attnMixAsm(rows int, o []float32, pr []float32, ldp int, v []float32, hd, n int) {
	j := 0
	switch rows {
	case 4:
		for ; j+16 <= hd; j += 16 {
			attnMixV4x16AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
		}
	case 2:
		for ; j+32 <= hd; j += 32 {
			attnMixV2x32AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
		}
	default:
		for ; j+64 <= hd; j += 64 {
			attnMixV1x64AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
		}
		if j+32 <= hd {
			attnMixV1x32AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
			j += 32
		}
	}
	for ; j < hd; j += 8 {
		for i := 0; i < rows; i++ {
			attnMixV1x8AVX2(&o[i*hd+j], hd, &pr[i*ldp], ldp, &v[j], hd, n)
		}
	}
}

// prefetchRowsAsm asks the caches for rows rows of n floats, ld apart,
// from p; it reads nothing into registers and changes no memory.
//
//go:noescape
func prefetchRowsAsm(p *float32, ld, rows, n int)
