package kernels

// widenBF16AVX2 widens n bfloat16 values (n a positive multiple of 16)
// exactly, as the Go loop
//
//	for i := 0; i < n; i++ {
//		dst[i] = math.Float32frombits(uint32(src[i]) << 16)
//	}
//
//go:noescape
func widenBF16AVX2(dst *float32, src *uint16, n int)

// widenBF16AVX512 is widenBF16AVX2 for n a positive multiple of 32.
//
//go:noescape
func widenBF16AVX512(dst *float32, src *uint16, n int)

// widenBF16Asm widens the longest prefix of src the assembly takes and
// returns its length.
func widenBF16Asm(dst []float32, src []uint16) int {
	n := len(src)
	if useAVX512 && n >= 32 {
		n &^= 31
		widenBF16AVX512(&dst[0], &src[0], n)
		return n
	}
	if n < 16 {
		return 0
	}
	n &^= 15
	widenBF16AVX2(&dst[0], &src[0], n)
	return n
}

// The score and value-sum kernels over bfloat16 keys and values
// (attn_bf16_scores_amd64.s, attn_bf16_mix_amd64.s): attnScores4AVX2 and
// the attnMixV kernels with each key or value widened as it is loaded, so
// the same FMA chains, the same bits, as those kernels on the widened
// cache.

//go:noescape
func attnScores4BF16AVX2(s *float32, lds int, q *float32, hd int, k *uint16, ldk, bs, n8 int)

//go:noescape
func attnScores2BF16AVX2(s *float32, lds int, q *float32, hd int, k *uint16, ldk, bs, n8 int)

//go:noescape
func attnScores1BF16AVX2(s *float32, q *float32, hd int, k *uint16, ldk, bs, n8 int)

//go:noescape
func attnMixV4x16BF16AVX2(o *float32, ldo int, pr *float32, ldp int, v *uint16, ldv int, n int)

//go:noescape
func attnMixV2x32BF16AVX2(o *float32, ldo int, pr *float32, ldp int, v *uint16, ldv int, n int)

//go:noescape
func attnMixV1x64BF16AVX2(o *float32, ldo int, pr *float32, ldp int, v *uint16, ldv int, n int)

//go:noescape
func attnMixV1x32BF16AVX2(o *float32, ldo int, pr *float32, ldp int, v *uint16, ldv int, n int)

//go:noescape
func attnMixV1x8BF16AVX2(o *float32, ldo int, pr *float32, ldp int, v *uint16, ldv int, n int)

// attnScoresBF16Asm is attnScoresAsm over bfloat16 keys.
func attnScoresBF16Asm(rows int, s []float32, lds int, q []float32, hd int, k []uint16, ldk, bs, n8 int) {
	switch rows {
	case 4:
		attnScores4BF16AVX2(&s[0], lds, &q[0], hd, &k[0], ldk, bs, n8)
	case 2:
		attnScores2BF16AVX2(&s[0], lds, &q[0], hd, &k[0], ldk, bs, n8)
	default:
		attnScores1BF16AVX2(&s[0], &q[0], hd, &k[0], ldk, bs, n8)
	}
}

// attnMixBF16Asm is attnMixAsm over bfloat16 values: the same tiles in
// the same order.
func attnMixBF16Asm(rows int, o []float32, pr []float32, ldp int, v []uint16, hd, n int) {
	j := 0
	switch rows {
	case 4:
		for ; j+16 <= hd; j += 16 {
			attnMixV4x16BF16AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
		}
	case 2:
		for ; j+32 <= hd; j += 32 {
			attnMixV2x32BF16AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
		}
	default:
		for ; j+64 <= hd; j += 64 {
			attnMixV1x64BF16AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
		}
		if j+32 <= hd {
			attnMixV1x32BF16AVX2(&o[j], hd, &pr[0], ldp, &v[j], hd, n)
			j += 32
		}
	}
	for ; j < hd; j += 8 {
		for i := 0; i < rows; i++ {
			attnMixV1x8BF16AVX2(&o[i*hd+j], hd, &pr[i*ldp], ldp, &v[j], hd, n)
		}
	}
}
