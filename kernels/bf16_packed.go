package kernels

// PackNTBF16 is PackNT into bf16 storage: b[n,k] is float32 (rounded to
// nearest even, like ToBF16) or already bf16, and dst holds PackedNTLen(k,
// n) bf16 elements in panel order. It panics if a slice is too short.
func PackNTBF16[S float32 | BF16](dst []BF16, b []S, k, n int) {
	checkPack("PackNTBF16", len(dst), len(b), k, n)
	// One loop per source type: a conversion chosen per element would cost
	// more than the copy.
	var fromF []float32
	var fromH []BF16
	switch x := any(b).(type) {
	case []float32:
		fromF = x
	case []BF16:
		fromH = x
	}
	Parallel(roundUp(n, gemmNR)/gemmNR, 1, func(q0, q1 int) {
		for q := q0; q < q1; q++ {
			panel := dst[q*gemmNR*k : (q+1)*gemmNR*k]
			w := min(gemmNR, n-q*gemmNR)
			for j := 0; j < w; j++ {
				lo, hi := (q*gemmNR+j)*k, (q*gemmNR+j+1)*k
				if fromF != nil {
					for p, v := range fromF[lo:hi] {
						panel[p*gemmNR+j] = bf16FromFloat(v)
					}
				} else {
					for p, v := range fromH[lo:hi] {
						panel[p*gemmNR+j] = v
					}
				}
			}
			for p := 0; p < k; p++ {
				clear(panel[p*gemmNR+w : p*gemmNR+gemmNR])
			}
		}
	})
}

// GemmPackedNTBF16 is GemmPackedNT with b packed by PackNTBF16. Its results
// are bit-identical to GemmPackedNT on the widened weights (and so to
// Gemm(NT, …) and GemmBF16NT for m > RowInvariantRows), and a row's result
// never depends on the other rows or the thread count. It panics if a slice
// is too short.
func GemmPackedNTBF16(out, a []float32, bp []BF16, m, k, n int, accumulate bool) {
	checkPacked("GemmPackedNTBF16", len(out), len(a), len(bp), m, k, n)
	if trivialGemm(out, m, k, n, accumulate) {
		return
	}
	g := newGemmJob(NT, out[:m*n], a[:m*k], nil, m, k, n, accumulate)
	g.ph = bp[:PackedNTLen(k, n)]
	g.runPacked()
}
