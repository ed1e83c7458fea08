package kernels

// dotTile3x4BF16AVX2 is dotTile3x4AVX2 with B rows stored as bf16, widened
// in registers (vpmovzxwd, then a 16-bit left shift). In Go:
//
//	for i := 0; i < 3; i++ {
//		for j := 0; j < 4; j++ {
//			var s float32
//			for p := 0; p < k8; p++ {
//				s += a_i[p] * math.Float32frombits(uint32(b_j[p])<<16)
//			}
//			c[i*4+j] = s
//		}
//	}
//
// k8 is a positive multiple of 8; the sum runs in 8 FMA lanes added
// pairwise at the end.
//
//go:noescape
func dotTile3x4BF16AVX2(k8 int, a0, a1, a2 *float32, b0, b1, b2, b3 *BF16, c *float32)

func dotTile3x4BF16(k8 int, a *[3][]float32, b *[4][]BF16, c *[12]float32) {
	if !useAsm {
		dotTile3x4BF16Go(k8, a, b, c)
		return
	}
	_, _, _ = a[0][k8-1], a[1][k8-1], a[2][k8-1]
	_, _, _, _ = b[0][k8-1], b[1][k8-1], b[2][k8-1], b[3][k8-1]
	dotTile3x4BF16AVX2(k8, &a[0][0], &a[1][0], &a[2][0], &b[0][0], &b[1][0], &b[2][0], &b[3][0], &c[0])
}
