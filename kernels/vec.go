package kernels

import "fmt"

// The vector primitives below run in 8-wide AVX2 lanes on amd64 (see
// vec_amd64.go) and as plain loops elsewhere. Lengths must match exactly:
// a mismatch is a programmer error and panics.

func sameLen(fn string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("kernels: %s: lengths differ: %d and %d", fn, a, b))
	}
}

// Dot returns Σ a[i]·b[i], summed in float32.
func Dot(a, b []float32) float32 {
	sameLen("Dot", len(a), len(b))
	return dot(a, b)
}

// SumSq returns Σ x[i]², summed in float32.
func SumSq(x []float32) float32 { return sumSq(x) }

// Axpy adds alpha·x to y.
func Axpy(alpha float32, x, y []float32) {
	sameLen("Axpy", len(x), len(y))
	axpy(alpha, x, y)
}

// Scale multiplies x by alpha in place.
func Scale(alpha float32, x []float32) { scale(alpha, x) }

// Add sets out = a + b elementwise; out may be a or b itself (but must not
// partly overlap them).
func Add(out, a, b []float32) {
	sameLen("Add", len(out), len(a))
	sameLen("Add", len(out), len(b))
	add(out, a, b)
}
