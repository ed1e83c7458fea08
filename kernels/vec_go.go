package kernels

// Pure-Go twins of the vector kernels: the fallback where AVX2+FMA is
// missing and the reference their assembly is tested against.

func dotGo(a, b []float32) float32 {
	var s float32
	b = b[:len(a)]
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func sumSqGo(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += v * v
	}
	return s
}

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

func scaleGo(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

func addGo(out, a, b []float32) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}
