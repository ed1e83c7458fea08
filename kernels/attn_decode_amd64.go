package kernels

// attnScores4AVX2 is attnScores4 for the positions p < n8 (n8 a positive
// multiple of 8, hd ≥ 1), each sum one FMA chain in increasing d:
//
//	for i := 0; i < 4; i++ {
//		for p := 0; p < n8; p++ {
//			var acc float32
//			for d := 0; d < hd; d++ {
//				acc = fma(q[i*hd+d], k[d*ldk+p], acc)
//			}
//			s[i*lds+p] = acc
//		}
//	}
//
//go:noescape
func attnScores4AVX2(s *float32, lds int, q *float32, hd int, k *float32, ldk, n8 int)

// attnMix4AVX2 sets o[i*hd+d] (i < 4, d < hd, hd even) to the sum over
// p < n (n ≥ 1) of pr[i*ldp+p]·v[d*ldv+p]: FMAs into 8 lane sums (lane
// p%8; the last n%8 positions through masked loads, which touch no memory
// past n), reduced as hsum8 does.
//
//go:noescape
func attnMix4AVX2(o *float32, pr *float32, ldp int, v *float32, ldv, hd, n int)
