package kernels

// sumSq4AVX2 is sumSq4Go (len(x) a multiple of 4), one 4-lane float64
// register of sums:
//
//	for j := range x {
//		acc[j%4] += float64(x[j]) * float64(x[j])
//	}
//
//go:noescape
func sumSq4AVX2(acc *[4]float64, x []float32)

// dotWX4AVX2 is dotWX4Go (len(dy) a multiple of 4; w, x at least as long):
//
//	for j := range dy {
//		acc[j%4] += float64(((dy[j] * w[j]) * x[j]) * s)
//	}
//
//go:noescape
func dotWX4AVX2(acc *[4]float64, dy, w, x []float32, s float32)

// scaleMulAVX2 is scaleMulGo for len(out) a multiple of 8:
//
//	for j := range out {
//		out[j] = (x[j] * s) * w[j]
//	}
//
//go:noescape
func scaleMulAVX2(out, x, w []float32, s float32)

// rmsBackAVX2 is rmsBackGo for len(d) a multiple of 8:
//
//	for j := range d {
//		d[j] += s * ((dy[j] * w[j]) - ((x[j] * s) * mt))
//	}
//
//go:noescape
func rmsBackAVX2(d, dy, w, x []float32, s, mt float32)

// addMulScaleAVX2 is addMulScaleGo for len(p) a multiple of 8:
//
//	for j := range p {
//		p[j] += (dy[j] * x[j]) * s
//	}
//
//go:noescape
func addMulScaleAVX2(p, dy, x []float32, s float32)

func sumSq4(acc *[4]float64, x []float32) {
	if n := len(x) &^ 3; useAsm && n > 0 {
		sumSq4AVX2(acc, x[:n])
		return
	}
	sumSq4Go(acc, x)
}

func dotWX4(acc *[4]float64, dy, w, x []float32, s float32) {
	if n := len(dy) &^ 3; useAsm && n > 0 {
		_, _ = w[n-1], x[n-1]
		dotWX4AVX2(acc, dy[:n], w, x, s)
		return
	}
	dotWX4Go(acc, dy, w, x, s)
}

func scaleMul(out, x, w []float32, s float32) {
	n8 := asm8(len(out))
	if n8 > 0 {
		_, _ = x[n8-1], w[n8-1]
		scaleMulAVX2(out[:n8], x, w, s)
	}
	scaleMulGo(out[n8:], x[n8:], w[n8:], s)
}

func rmsBack(d, dy, w, x []float32, s, mt float32) {
	n8 := asm8(len(d))
	if n8 > 0 {
		_, _, _ = dy[n8-1], w[n8-1], x[n8-1]
		rmsBackAVX2(d[:n8], dy, w, x, s, mt)
	}
	rmsBackGo(d[n8:], dy[n8:], w[n8:], x[n8:], s, mt)
}

func addMulScale(p, dy, x []float32, s float32) {
	n8 := asm8(len(p))
	if n8 > 0 {
		_, _ = dy[n8-1], x[n8-1]
		addMulScaleAVX2(p[:n8], dy, x, s)
	}
	addMulScaleGo(p[n8:], dy[n8:], x[n8:], s)
}

// The many-row kernels (norm.go), for C a positive multiple of 8 and at
// least one row; lengths as their Go twins read them.

// sumSqRowsAVX2 is sumSqRowsGo: per row, sumSq4AVX2's four sums, added
// (a0+a1)+(a2+a3).
//
//go:noescape
func sumSqRowsAVX2(ss []float64, x []float32, C int)

// dotWXRowsAVX2 is dotWXRowsGo: per row, dotWX4AVX2's four sums with
// the row's s, added (a0+a1)+(a2+a3).
//
//go:noescape
func dotWXRowsAVX2(m []float64, dy, w, x, s []float32, C int)

// scaleMulRowsAVX2 is scaleMulRowsGo (rows: len(s)).
//
//go:noescape
func scaleMulRowsAVX2(out, x, w, s []float32, C int)

// rmsBackRowsAVX2 is rmsBackRowsGo (rows: len(s)).
//
//go:noescape
func rmsBackRowsAVX2(d, dy, w, x, s, mt []float32, C int)

// addMulScaleRowsAVX2 is addMulScaleRowsGo (rows: len(s)).
//
//go:noescape
func addMulScaleRowsAVX2(p, dy, x, s []float32, C int)

// rowsAsm says whether the many-row kernels take rows rows of C elements
// (the slices checked to hold them).
func rowsAsm(rows, C int) bool { return useAsm && rows > 0 && C > 0 && C%8 == 0 }

func sumSqRows(ss []float64, x []float32, C int) {
	if rowsAsm(len(ss), C) {
		_ = x[len(ss)*C-1]
		sumSqRowsAVX2(ss, x, C)
		return
	}
	sumSqRowsGo(ss, x, C)
}

func dotWXRows(m []float64, dy, w, x, s []float32, C int) {
	if rowsAsm(len(m), C) {
		_, _, _, _ = dy[len(m)*C-1], x[len(m)*C-1], w[C-1], s[len(m)-1]
		dotWXRowsAVX2(m, dy, w, x, s, C)
		return
	}
	dotWXRowsGo(m, dy, w, x, s, C)
}

func scaleMulRows(out, x, w, s []float32, C int) {
	if rowsAsm(len(s), C) {
		_, _, _ = out[len(s)*C-1], x[len(s)*C-1], w[C-1]
		scaleMulRowsAVX2(out, x, w, s, C)
		return
	}
	scaleMulRowsGo(out, x, w, s, C)
}

func rmsBackRows(d, dy, w, x, s, mt []float32, C int) {
	if rowsAsm(len(s), C) {
		_, _, _, _, _ = d[len(s)*C-1], dy[len(s)*C-1], x[len(s)*C-1], w[C-1], mt[len(s)-1]
		rmsBackRowsAVX2(d, dy, w, x, s, mt, C)
		return
	}
	rmsBackRowsGo(d, dy, w, x, s, mt, C)
}

func addMulScaleRows(p, dy, x, s []float32, C int) {
	if rowsAsm(len(s), C) {
		_, _, _ = p[C-1], dy[len(s)*C-1], x[len(s)*C-1]
		addMulScaleRowsAVX2(p, dy, x, s, C)
		return
	}
	addMulScaleRowsGo(p, dy, x, s, C)
}
