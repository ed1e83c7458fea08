package kernels

// The AVX-512 forms of the exp kernels (exp512_amd64.s): 16 lanes, the
// operations of their AVX2 forms, so the same bits; lengths a multiple of
// 16 (expSubAVX512: of 8, summed in expSubAVX2's 8 lanes and order).

// sigmoidAVX512 is sigmoidAVX2 over 16 lanes.
//
//go:noescape
func sigmoidAVX512(out, x []float32)

// siluMulAVX512 is siluMulAVX2 over 16 lanes.
//
//go:noescape
func siluMulAVX512(out, g, u []float32)

// attnDSAVX512 is attnDSGo over 16 lanes, for any length (the last
// partial block under a mask).
//
//go:noescape
func attnDSAVX512(s, dp []float32, scale, l, d float32)

// expSubAVX512 is expSubAVX2 (len(x) a multiple of 8) with the exps in
// 16 lanes: each 16-lane block's low half is added into the 8 sums before
// its high half, which keeps every sum's order.
//
//go:noescape
func expSubAVX512(x []float32, sub float32) float32

// expAVX512 replaces x[i] by exp8(x[i]-sub), for any length (the last
// partial block under a mask):
//
//	for i := range x {
//		x[i] = exp8(x[i] - sub)
//	}
//
//go:noescape
func expAVX512(x []float32, sub float32)

// softExpAVX512 is softExpAVX2 with expSubAVX512's exps: scaleMaxAVX2's
// pass, then expSubAVX512's (len(x) a positive multiple of 8), the same
// bits as those two kernels in turn.
//
//go:noescape
func softExpAVX512(x []float32, scale float32) float32
