package kernels

// PackNTBF16 is PackNT into bf16 storage: b[n,k] is float32 (rounded to
// nearest even, like ToBF16) or already bf16, and dst holds PackedNTLen(k,
// n) bf16 elements. The 16-column panels of PackNT are kept, but each whole
// group of four (64 columns, packedGroupCols) is interleaved step by step:
// element (j, p) of a group starting at column j0 lands at
// dst[j0*k + p*64 + j-j0], so that a one-row product reads the group as one
// contiguous stream instead of four streams a panel apart. The columns past
// the last whole group (n mod 64) keep PackNT's panels, zero-padded. A view
// of PackedNTLen(k, j) elements at offset PackedNTLen(k, j0), j0 a
// multiple of 64 and j a multiple of 64 or reaching n, is the packed form of
// rows j0..j0+j-1 alone. It panics if a slice is too short.
//
// Measured on the 2-core AVX-512 machine, one 110M token's products back to
// back, eight rounds alternating (go test -c ./kernels, then -test.bench
// 'GemmPackedNTBF16/(token110M_m1|head)' -test.benchtime 40x): 43.1 GB/s
// median as four streams, 45.0 as one (docs/PERFORMANCE.md, session 60).
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
			off, ldb := bf16Panel(k, n, q)
			w := min(gemmNR, n-q*gemmNR)
			for j := 0; j < w; j++ {
				lo, hi := (q*gemmNR+j)*k, (q*gemmNR+j+1)*k
				at := off + j
				if fromF != nil {
					for _, v := range fromF[lo:hi] {
						dst[at] = bf16FromFloat(v)
						at += ldb
					}
				} else {
					for _, v := range fromH[lo:hi] {
						dst[at] = v
						at += ldb
					}
				}
			}
			for p := 0; p < k; p++ {
				clear(dst[off+p*ldb+w : off+p*ldb+gemmNR])
			}
		}
	})
}

// packedGroupCols is the width of a group of four panels: what a one-row
// product on packed weights reads at once, and what PackNTBF16 interleaves.
const packedGroupCols = gemmNR * packedPanelGroup

// bf16Panel returns where panel q (columns 16q..16q+15) of a k×n matrix
// packed by PackNTBF16 starts, and how many elements apart its steps are:
// 64 inside a whole group of four panels, 16 past the last one.
func bf16Panel(k, n, q int) (off, ldb int) {
	if q < n/packedGroupCols*packedPanelGroup {
		return q/packedPanelGroup*packedGroupCols*k + q%packedPanelGroup*gemmNR, packedGroupCols
	}
	return q * gemmNR * k, gemmNR
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
