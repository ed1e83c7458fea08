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

// expPoly is e^r for |r| ≤ ln2/2 by its Taylor polynomial to degree 7
// (truncation error < 3e-9), evaluated in Estrin's scheme so the
// multiplications do not all wait on each other.
func expPoly(r float32) float32 {
	r2 := r * r
	r4 := r2 * r2
	return (1 + r) + r2*(0.5+r*(1.0/6)) + r4*((1.0/24+r*(1.0/120))+r2*(1.0/720+r*(1.0/5040)))
}

// opExp32 is e^x in float32 to within 2e-7 relative (math.Exp costs ~10×
// more, and attention and SwiGLU call it once per score and per hidden
// unit): x = n·ln2 + r with |r| ≤ ln2/2, e^r by expPoly, then scaled by
// 2^n through the exponent bits.
func opExp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -103.97:
		return 0
	}
	n := float32(math.Floor(float64(x*1.442695040888963) + 0.5))
	// ln2 split in two so that n·ln2hi is exact.
	r := x - n*0.693145751953125 - n*1.428606765330187e-06
	p := expPoly(r)
	e := int32(n)
	if e < -126 {
		// Subnormal result: scale in two steps.
		return p * math.Float32frombits(uint32(e+126+127)<<23) * math.Float32frombits(1<<23)
	}
	if e > 127 {
		return p * 2 * math.Float32frombits(uint32(e-1+127)<<23)
	}
	return p * math.Float32frombits(uint32(e+127)<<23)
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

// opSoftmax32 is opSoftmax for float32 with opExp32's polynomial inlined
// (no call per element); arguments are ≤ 0 after the max shift, so only
// underflow needs care.
func opSoftmax32(row []float32, scale float32) float64 {
	mx := float32(math.Inf(-1))
	for j := range row {
		row[j] *= scale
		mx = max(mx, row[j])
	}
	var sum float64
	for j, v := range row {
		x := v - mx
		var e float32
		if x >= -87 {
			// Round x·log2(e) to the nearest integer n with the 1.5·2^23
			// shifter, then e^x = 2^n · e^r with |r| ≤ ln2/2.
			t := x*1.442695040888963 + 12582912
			n := t - 12582912
			r := x - n*0.693145751953125 - n*1.428606765330187e-06
			e = expPoly(r) * math.Float32frombits(uint32(int32(n)+127)<<23)
		} else if x == x {
			e = opExp32(x)
		} else {
			e = x
		}
		row[j] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for j := range row {
		row[j] *= inv
	}
	return float64(mx) + math.Log(sum)
}
