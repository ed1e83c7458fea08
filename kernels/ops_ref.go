package kernels

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
