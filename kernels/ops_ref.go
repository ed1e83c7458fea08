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

// opExp32 is e^x in float32 to within 2e-7 relative (math.Exp costs ~10×
// more, and attention and SwiGLU call it once per score and per hidden
// unit): x = n·ln2 + r with |r| ≤ ln2/2, e^r by its Taylor polynomial to
// degree 7 (truncation error < 3e-9), then scaled by 2^n through the
// exponent bits.
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
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
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
