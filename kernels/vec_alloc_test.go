package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestHugeAlloc(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 3 << 20} {
		h := HugeBF16(n)
		f := HugeFloat32(n)
		if len(h) != n || len(f) != n {
			t.Fatalf("n=%d: got lengths %d and %d", n, len(h), len(f))
		}
		for i := range h {
			if h[i] != 0 || f[i] != 0 {
				t.Fatalf("n=%d: element %d not zero", n, i)
			}
		}
		for i := range h {
			h[i] = BF16(i)
			f[i] = float32(i)
		}
		for i := range h {
			if h[i] != BF16(i) || f[i] != float32(i) {
				t.Fatalf("n=%d: element %d did not keep its value", n, i)
			}
		}
		FreeHuge(h)
		FreeHuge(f)
	}
	// Kernels work on such memory like on any other.
	r := rand.New(rand.NewPCG(31, 32))
	m, k, n := 1, 768, 100
	b := HugeBF16(k * n)
	defer FreeHuge(b)
	randBF16(r, b)
	a := make([]float32, m*k)
	randFill(r, a)
	out := make([]float32, n)
	want := make([]float64, n)
	GemmBF16NT(out, a, b, m, k, n, false)
	GemmBF16NTRef(want, widen(a), b, m, k, n, false)
	for j := range out {
		if d := math.Abs(float64(out[j]) - want[j]); d > gemmTolerance(k, 1, 1, 0) {
			t.Fatalf("out[%d] = %v, want %v", j, out[j], want[j])
		}
	}
}
