package kernels

import "math"

// Generic pure-Go vector loops of the float64 CPU backend (the float32 one
// uses Dot and Axpy). Each sums in one fixed order.

// opDot returns Σ a[i]·b[i], summed left to right.
func opDot[T Float](a, b []T) T {
	b = b[:len(a)]
	var s T
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// opAxpy sets y[i] += alpha·x[i].
func opAxpy[T Float](alpha T, x, y []T) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// opAdd sets out = a + b.
func opAdd[T Float](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	for i := range out {
		out[i] = a[i] + b[i]
	}
}

// opAttnDS turns a row of attention scores into probabilities, s =
// e^(s·scale − l), and dp into the scores' gradient (p·(dp − d))·scale.
func opAttnDS[T Float](s, dp []T, scale, l, d T) {
	for e := range s {
		s[e] *= scale
	}
	opExpSub(s, l)
	for e, p := range s {
		dp[e] = p * (dp[e] - d) * scale
	}
}

// opExpSub replaces row[i] by e^(row[i]-sub) and returns their sum, added
// left to right.
func opExpSub[T Float](row []T, sub T) T {
	var s T
	for i, v := range row {
		e := T(math.Exp(float64(v - sub)))
		row[i] = e
		s += e
	}
	return s
}

// opSigmoid sets out[i] = 1/(1+e^-x[i]).
func opSigmoid[T Float](out, x []T) {
	x = x[:len(out)]
	for i, v := range x {
		out[i] = 1 / (1 + T(math.Exp(-float64(v))))
	}
}

// opSiLUMul sets out[i] = g[i]·sigmoid(g[i])·u[i].
func opSiLUMul[T Float](out, g, u []T) {
	g, u = g[:len(out)], u[:len(out)]
	for i, v := range g {
		out[i] = v * (1 / (1 + T(math.Exp(-float64(v))))) * u[i]
	}
}

// opSoftmax replaces row by softmax(scale·row) and returns the
// log-sum-exp of scale·row (the sum accumulated in float64).
func opSoftmax[T Float](row []T, scale T) float64 {
	mx := T(math.Inf(-1))
	for j := range row {
		row[j] *= scale
		mx = max(mx, row[j])
	}
	var sum float64
	for j, v := range row {
		e := T(math.Exp(float64(v - mx)))
		row[j] = e
		sum += float64(e)
	}
	inv := T(1 / sum)
	for j := range row {
		row[j] *= inv
	}
	return float64(mx) + math.Log(sum)
}

// opSoftmax32 is opSoftmax for float32 on the vector kernels: the
// exponentials and their sum come from expSub (8 float32 lane sums, which
// over a row of probabilities ≤ 1 lose nothing that matters next to
// float32 outputs).
func opSoftmax32(row []float32, s float32) float64 {
	mx := scaleMax(row, s)
	sum := expSub(row, mx)
	scale(1/sum, row)
	return float64(mx) + math.Log(float64(sum))
}
