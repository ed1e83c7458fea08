package kernels

// adamwAVX2 is adamwGo for len(p) a multiple of 8 (g, m, v at least as
// long): the same float32 operations in the same order, no fused
// multiply-adds.
//
//go:noescape
func adamwAVX2(p, g, m, v []float32, k *adamwK)

func adamw(p, g, m, v []float32, k *adamwK) {
	n8 := asm8(len(p))
	if n8 > 0 {
		_, _, _ = g[n8-1], m[n8-1], v[n8-1]
		adamwAVX2(p[:n8], g, m, v, k)
	}
	adamwGo(p[n8:], g[n8:], m[n8:], v[n8:], k)
}
