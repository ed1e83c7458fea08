package kernels

// dotAVX2 returns the dot product of a and b (len(b) ≥ len(a)). In Go:
//
//	var s float32
//	for i := range a {
//		s += a[i] * b[i]
//	}
//	return s
//
// It sums in four 8-lane FMA accumulators (32 elements a trip), adds them
// pairwise, reduces the lanes and then folds in the last len(a)%8 products
// one by one, so its rounding differs from the loop's.
//
//go:noescape
func dotAVX2(a, b []float32) float32

// sumSqAVX2 returns Σ x[i]², like dotAVX2(x, x) with one load per element.
//
//	var s float32
//	for _, v := range x {
//		s += v * v
//	}
//	return s
//
//go:noescape
func sumSqAVX2(x []float32) float32

// axpyAVX2 adds alpha·x to y (len(y) ≥ len(x)), each element one FMA:
//
//	for i := range x {
//		y[i] += alpha * x[i]
//	}
//
//go:noescape
func axpyAVX2(alpha float32, x, y []float32)

// scaleAVX2 multiplies x by alpha in place:
//
//	for i := range x {
//		x[i] *= alpha
//	}
//
//go:noescape
func scaleAVX2(alpha float32, x []float32)

// addAVX2 sets out = a + b (len(a), len(b) ≥ len(out)):
//
//	for i := range out {
//		out[i] = a[i] + b[i]
//	}
//
//go:noescape
func addAVX2(out, a, b []float32)

func dot(a, b []float32) float32 {
	if useAsm {
		return dotAVX2(a, b)
	}
	return dotGo(a, b)
}

func sumSq(x []float32) float32 {
	if useAsm {
		return sumSqAVX2(x)
	}
	return sumSqGo(x)
}

func axpy(alpha float32, x, y []float32) {
	if useAsm {
		axpyAVX2(alpha, x, y)
		return
	}
	axpyGo(alpha, x, y)
}

func scale(alpha float32, x []float32) {
	if useAsm {
		scaleAVX2(alpha, x)
		return
	}
	scaleGo(alpha, x)
}

func add(out, a, b []float32) {
	if useAsm {
		addAVX2(out, a, b)
		return
	}
	addGo(out, a, b)
}
