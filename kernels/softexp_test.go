package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftExpOneKernel checks decode attention's one-kernel softmax
// numerators against the Go twins of the two passes it fuses
// (scaleMaxGo, then expSubGo with the maximum), bit for bit, for every
// length up to 600 (the AVX2 and the 16-lane kernels, lengths that are no
// multiple of 8) with decode rows' −∞ padding, large and tiny scores, and
// guards past the row that must stay untouched.
func TestSoftExpOneKernel(t *testing.T) {
	bf16Modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 3))
		for n := 1; n <= 600; n++ {
			testSoftExp(t, r, n)
		}
	})
}

func testSoftExp(t *testing.T, r *rand.Rand, n int) {
	row := make([]float32, n+5)
	for i := range row[:n] {
		row[i] = float32(r.NormFloat64() * 8)
	}
	if n > 10 {
		row[n-1], row[n-2] = float32(math.Inf(-1)), float32(math.Inf(-1)) // padding
		row[3] = 300                                                      // e^(x−m) underflows elsewhere
	}
	const guard = float32(-5.5)
	for i := n; i < len(row); i++ {
		row[i] = guard
	}
	want := append([]float32(nil), row[:n]...)
	scale := float32(0.17677669)
	wsum := expSubGo(want, scaleMaxGo(want, scale))
	sum := softExp(row[:n], scale)
	if math.Float32bits(sum) != math.Float32bits(wsum) {
		t.Fatalf("n=%d: sum %v, the two passes' %v", n, sum, wsum)
	}
	for i := range want {
		if math.Float32bits(row[i]) != math.Float32bits(want[i]) {
			t.Fatalf("n=%d: element %d is %v, the two passes' %v", n, i, row[i], want[i])
		}
	}
	for i := n; i < len(row); i++ {
		if row[i] != guard {
			t.Fatalf("n=%d: guard %d overwritten with %v", n, i-n, row[i])
		}
	}
}

// FuzzSoftExp compares softExp with its Go twins on any row.
func FuzzSoftExp(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 64}, float32(0.125))
	f.Add(make([]byte, 4*264), float32(1))
	f.Fuzz(func(t *testing.T, b []byte, scale float32) {
		n := len(b) / 4
		if n == 0 || scale != scale {
			return
		}
		row := make([]float32, n)
		for i := range row {
			row[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		want := append([]float32(nil), row...)
		wsum := expSubGo(want, scaleMaxGo(want, scale))
		sum := softExp(row, scale)
		same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b) }
		if !same(sum, wsum) {
			t.Fatalf("n=%d: sum %v, the two passes' %v", n, sum, wsum)
		}
		for i := range want {
			if !same(row[i], want[i]) {
				t.Fatalf("n=%d: element %d is %v, the two passes' %v", n, i, row[i], want[i])
			}
		}
	})
}

// BenchmarkSoftExp times decode attention's softmax numerators on a row of
// n scores: "two-kernels" as before (scaleMax, then expSub), "one-kernel"
// softExp (docs/PERFORMANCE.md alternates them from one test binary).
func BenchmarkSoftExp(b *testing.B) {
	for _, n := range []int{136, 520} {
		src, row := make([]float32, n), make([]float32, n)
		r := rand.New(rand.NewPCG(1, 1))
		for i := range src {
			src[i] = float32(r.NormFloat64())
		}
		fill := func() { copy(row, src) }
		b.Run(fmt.Sprintf("n%d/two-kernels", n), func(b *testing.B) {
			for b.Loop() {
				fill()
				expSub(row, scaleMax(row, 0.125))
			}
		})
		b.Run(fmt.Sprintf("n%d/one-kernel", n), func(b *testing.B) {
			for b.Loop() {
				fill()
				softExp(row, 0.125)
			}
		})
	}
}
