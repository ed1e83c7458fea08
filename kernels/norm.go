package kernels

import "math"

// Row kernels of RMSNorm and its backward pass in float32, vectorised on
// amd64 (norm_amd64.s) with pure-Go twins here that perform the very same
// operations in the same order: the generic loops of cpu_ops.go computed
// this way, bit for bit. The squares and means are summed in float64, in
// four sums over the elements j%4 (one 4-lane float64 register), added
// pairwise at the end; the explicit conversions keep a compiler from
// fusing a product and a sum, which the assembly does not do.

// sumSq4Go adds float64(x[j])² into acc[j%4], len(x) a multiple of 4.
func sumSq4Go(acc *[4]float64, x []float32) {
	for j := 0; j+4 <= len(x); j += 4 {
		v := x[j : j+4 : j+4]
		for l := range acc {
			acc[l] += float64(float64(v[l]) * float64(v[l]))
		}
	}
}

// dotWX4Go adds float64(((dy[j]·w[j])·x[j])·s) into acc[j%4], len(dy) a
// multiple of 4 (w, x at least as long).
func dotWX4Go(acc *[4]float64, dy, w, x []float32, s float32) {
	w, x = w[:len(dy)], x[:len(dy)]
	for j := 0; j+4 <= len(dy); j += 4 {
		for l := range acc {
			p := float32(float32(float32(dy[j+l]*w[j+l])*x[j+l]) * s)
			acc[l] += float64(p)
		}
	}
}

// scaleMulGo sets out[j] = (x[j]·s)·w[j] (RMSNorm's output).
func scaleMulGo(out, x, w []float32, s float32) {
	x, w = x[:len(out)], w[:len(out)]
	for j, v := range x {
		out[j] = float32(v*s) * w[j]
	}
}

// rmsBackGo adds s·(dy[j]·w[j] − (x[j]·s)·mt) to d[j] (RMSNorm's input
// gradient).
func rmsBackGo(d, dy, w, x []float32, s, mt float32) {
	dy, w, x = dy[:len(d)], w[:len(d)], x[:len(d)]
	for j, v := range x {
		t := float32(float32(dy[j]*w[j]) - float32(float32(v*s)*mt))
		d[j] = d[j] + float32(s*t)
	}
}

// addMulScaleGo adds (dy[j]·x[j])·s to p[j] (a row's share of RMSNorm's
// weight gradient).
func addMulScaleGo(p, dy, x []float32, s float32) {
	dy, x = dy[:len(p)], x[:len(p)]
	for j, v := range x {
		p[j] = p[j] + float32(float32(dy[j]*v)*s)
	}
}

// rmsNormRow32 normalises one row: out = x·rstd·w with rstd =
// 1/√(mean(x²)+eps), which it returns.
func rmsNormRow32(out, x, w []float32, eps float64) float32 {
	var acc [4]float64
	n4 := len(x) &^ 3
	sumSq4(&acc, x[:n4])
	for _, v := range x[n4:] {
		acc[0] += float64(float64(v) * float64(v))
	}
	ss := (acc[0] + acc[1]) + (acc[2] + acc[3])
	s := float32(1 / math.Sqrt(ss/float64(len(x))+eps))
	scaleMul(out, x, w, s)
	return s
}

// rmsNormBackRow32 adds one row's input gradient to d: with xhat = x·s,
// d += s·(dy·w − xhat·mean(dy·w·xhat)).
func rmsNormBackRow32(d, dy, w, x []float32, s float32) {
	var acc [4]float64
	C := len(x)
	n4 := C &^ 3
	dotWX4(&acc, dy[:n4], w[:n4], x[:n4], s)
	for j := n4; j < C; j++ {
		acc[0] += float64(float32(float32(float32(dy[j]*w[j])*x[j]) * s))
	}
	mt := float32(((acc[0] + acc[1]) + (acc[2] + acc[3])) / float64(C))
	rmsBack(d, dy, w, x, s, mt)
}

// The row kernels above, over many rows of C elements at once (C a
// multiple of 8): one call per block of rows instead of several per row,
// which for the short rows of a per-head norm (C = head_dim) cost more
// than the arithmetic. Row r's results are those of the one-row kernels.

// sumSqRowsGo sets ss[r] to row r's sum of squares as rmsNormRow32 adds
// it: four float64 sums over j%4, (s0+s1)+(s2+s3).
func sumSqRowsGo(ss []float64, x []float32, C int) {
	for r := range ss {
		var acc [4]float64
		sumSq4Go(&acc, x[r*C:r*C+C])
		ss[r] = (acc[0] + acc[1]) + (acc[2] + acc[3])
	}
}

// dotWXRowsGo sets m[r] to Σ_j ((dy·w)·x)·s[r] over row r as
// rmsNormBackRow32 adds it (before the division by C).
func dotWXRowsGo(m []float64, dy, w, x, s []float32, C int) {
	for r := range m {
		var acc [4]float64
		dotWX4Go(&acc, dy[r*C:r*C+C], w, x[r*C:r*C+C], s[r])
		m[r] = (acc[0] + acc[1]) + (acc[2] + acc[3])
	}
}

// scaleMulRowsGo runs scaleMulGo on every row, with row r's s[r].
func scaleMulRowsGo(out, x, w, s []float32, C int) {
	for r, sr := range s {
		scaleMulGo(out[r*C:r*C+C], x[r*C:r*C+C], w, sr)
	}
}

// rmsBackRowsGo runs rmsBackGo on every row, with row r's s[r] and mt[r].
func rmsBackRowsGo(d, dy, w, x, s, mt []float32, C int) {
	for r, sr := range s {
		rmsBackGo(d[r*C:r*C+C], dy[r*C:r*C+C], w, x[r*C:r*C+C], sr, mt[r])
	}
}

// addMulScaleRowsGo runs addMulScaleGo for every row into the same p, in
// row order.
func addMulScaleRowsGo(p, dy, x, s []float32, C int) {
	for r, sr := range s {
		addMulScaleGo(p, dy[r*C:r*C+C], x[r*C:r*C+C], sr)
	}
}

// rmsNormRows32 normalises len(rs) rows of C (a multiple of 8) elements,
// setting rs[r] to each row's 1/√(mean(x²)+eps): rmsNormRow32's bits.
// rowsOnStack is how many rows' sums the row-batched norms keep in an
// array on the stack: a decoding step's rows (at most 64) then allocate
// nothing, where a slice of their number went to the heap every layer.
const rowsOnStack = 64

func rmsNormRows32(out, rs, x, w []float32, C int, eps float64) {
	var stack [rowsOnStack]float64
	ss := stack[:0]
	if len(rs) <= rowsOnStack {
		ss = stack[:len(rs)]
	} else {
		ss = make([]float64, len(rs))
	}
	sumSqRows(ss, x, C)
	for r, v := range ss {
		rs[r] = float32(1 / math.Sqrt(v/float64(C)+eps))
	}
	scaleMulRows(out, x, w, rs, C)
}

// rmsNormBackRows32 adds the input gradients of len(s) rows of C (a
// multiple of 8) elements to d: rmsNormBackRow32's bits.
func rmsNormBackRows32(d, dy, w, x, s []float32, C int) {
	var stack [rowsOnStack]float64
	var stackT [rowsOnStack]float32
	m, mt := stack[:0], stackT[:0]
	if len(s) <= rowsOnStack {
		m, mt = stack[:len(s)], stackT[:len(s)]
	} else {
		m, mt = make([]float64, len(s)), make([]float32, len(s))
	}
	dotWXRows(m, dy, w, x, s, C)
	for r, v := range m {
		mt[r] = float32(v / float64(C))
	}
	rmsBackRows(d, dy, w, x, s, mt, C)
}
