package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func vecSizes() []int {
	s := make([]int, 0, 140)
	for n := 0; n <= 130; n++ {
		s = append(s, n)
	}
	return append(s, 255, 256, 257, 1000, 4099)
}

// guardedInput returns n random values surrounded by NaN guards: a kernel
// that reads past the end folds a NaN into its result.
func guardedInput(r *rand.Rand, n int) (x, whole []float32) {
	x, whole = padded(n, math.Float32frombits(guardBits))
	randFill(r, x)
	return x, whole
}

// reductionTolerance bounds the error of a float32 sum of n terms whose
// absolute values add up to abs. Every partial sum is at most abs and each
// rounding errs by ≤ u = 2⁻²⁴ of it; rounding errors add like a random walk,
// so the error is ≈ u·√n·abs at worst for same-sign terms (SumSq, the Go
// loop's single chain measures ≈ 0.4 of that at n = 4099). 4·u·(√n+1)·abs
// keeps a margin of ten, while a lost average term (≈ abs/n) exceeds the
// tolerance 2500× at n = 130 and 15× at n = 4099.
func reductionTolerance(n int, abs float64) float64 {
	return 4 * math.Ldexp(1, -24) * (math.Sqrt(float64(n)) + 1) * abs
}

func testDot(t *testing.T, r *rand.Rand, n int) {
	a, aw := guardedInput(r, n)
	b, bw := guardedInput(r, n)
	var want, abs float64
	for i := range a {
		want += float64(a[i]) * float64(b[i])
		abs += math.Abs(float64(a[i]) * float64(b[i]))
	}
	got := Dot(a, b)
	checkGuards(t, aw, n, "Dot a")
	checkGuards(t, bw, n, "Dot b")
	if tol := reductionTolerance(n, abs); !(math.Abs(float64(got)-want) <= tol) {
		t.Fatalf("Dot n=%d = %v, want %v (tol %.3g)", n, got, want, tol)
	}
}

func testSumSq(t *testing.T, r *rand.Rand, n int) {
	x, xw := guardedInput(r, n)
	var want float64
	for _, v := range x {
		want += float64(v) * float64(v)
	}
	abs := want
	got := SumSq(x)
	checkGuards(t, xw, n, "SumSq x")
	if tol := reductionTolerance(n, abs); !(math.Abs(float64(got)-want) <= tol) {
		t.Fatalf("SumSq n=%d = %v, want %v (tol %.3g)", n, got, want, tol)
	}
}

// testAxpy allows 2⁻²² relative error per element: the FMA rounds once, the
// Go loop twice (product and sum), each by at most 2⁻²⁴ of |y|+|αx|.
func testAxpy(t *testing.T, r *rand.Rand, n int) {
	alpha := 4*r.Float32() - 2
	x, xw := guardedInput(r, n)
	y, yw := padded(n, math.Float32frombits(guardBits))
	randFill(r, y)
	y0 := append([]float32(nil), y...)
	Axpy(alpha, x, y)
	checkGuards(t, xw, n, "Axpy x")
	checkGuards(t, yw, n, "Axpy y")
	for i := range y {
		want := float64(y0[i]) + float64(alpha)*float64(x[i])
		tol := math.Ldexp(math.Abs(float64(y0[i]))+math.Abs(float64(alpha)*float64(x[i])), -22)
		if !(math.Abs(float64(y[i])-want) <= tol) {
			t.Fatalf("Axpy n=%d: y[%d] = %v, want %v", n, i, y[i], want)
		}
	}
}

// Scale and Add round once, as Go's float32 operators do, so they must
// match them bit for bit.
func testScale(t *testing.T, r *rand.Rand, n int) {
	alpha := 4*r.Float32() - 2
	x, xw := padded(n, math.Float32frombits(guardBits))
	randFill(r, x)
	want := append([]float32(nil), x...)
	for i := range want {
		want[i] *= alpha
	}
	Scale(alpha, x)
	checkGuards(t, xw, n, "Scale x")
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(want[i]) {
			t.Fatalf("Scale n=%d: x[%d] = %v, want %v", n, i, x[i], want[i])
		}
	}
}

func testAdd(t *testing.T, r *rand.Rand, n int, alias bool) {
	a, aw := padded(n, math.Float32frombits(guardBits))
	b, bw := guardedInput(r, n)
	randFill(r, a)
	want := make([]float32, n)
	for i := range want {
		want[i] = a[i] + b[i]
	}
	out, ow := padded(n, math.Float32frombits(guardBits))
	if alias {
		out, ow = a, aw
	}
	Add(out, a, b)
	checkGuards(t, ow, n, "Add out")
	checkGuards(t, bw, n, "Add b")
	for i := range out {
		if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
			t.Fatalf("Add n=%d alias=%v: out[%d] = %v, want %v", n, alias, i, out[i], want[i])
		}
	}
}

func TestVectorKernels(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		for _, n := range vecSizes() {
			testDot(t, r, n)
			testSumSq(t, r, n)
			testAxpy(t, r, n)
			testScale(t, r, n)
			testAdd(t, r, n, false)
			testAdd(t, r, n, true)
		}
	})
}

func TestVectorLengthMismatchPanics(t *testing.T) {
	for name, fn := range map[string]func(){
		"Dot":  func() { Dot(make([]float32, 3), make([]float32, 4)) },
		"Axpy": func() { Axpy(1, make([]float32, 3), make([]float32, 2)) },
		"Add":  func() { Add(make([]float32, 3), make([]float32, 3), make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with mismatched lengths did not panic", name)
				}
			}()
			fn()
		}()
	}
}

func fuzzVec(f *testing.F, test func(t *testing.T, r *rand.Rand, n int)) {
	f.Add(uint64(1), uint16(0))
	f.Add(uint64(2), uint16(7))
	f.Add(uint64(3), uint16(33))
	f.Add(uint64(4), uint16(1025))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16) {
		size := int(n) % 5000
		eachImpl(t, func(t *testing.T) { test(t, rand.New(rand.NewPCG(seed, 9)), size) })
	})
}

func FuzzDot(f *testing.F)   { fuzzVec(f, testDot) }
func FuzzSumSq(f *testing.F) { fuzzVec(f, testSumSq) }
func FuzzAxpy(f *testing.F)  { fuzzVec(f, testAxpy) }
func FuzzScale(f *testing.F) { fuzzVec(f, testScale) }
func FuzzAdd(f *testing.F) {
	fuzzVec(f, func(t *testing.T, r *rand.Rand, n int) { testAdd(t, r, n, n%2 == 0) })
}

// benchVec runs fn over vectors of the model's widths, reporting the bytes
// it reads and writes per call.
func benchVec(b *testing.B, bytesPerElem int, fn func(x, y, z []float32)) {
	for _, n := range []int{768, 2048, 32000} {
		r := rand.New(rand.NewPCG(1, 1))
		x, y, z := make([]float32, n), make([]float32, n), make([]float32, n)
		randFill(r, x)
		randFill(r, y)
		b.Run(fmt.Sprintf("n%d", n), func(b *testing.B) {
			b.SetBytes(int64(bytesPerElem * n))
			for range b.N {
				fn(x, y, z)
			}
		})
	}
}

var vecSink float32

func BenchmarkDot(b *testing.B) {
	benchVec(b, 8, func(x, y, _ []float32) { vecSink += Dot(x, y) })
}
func BenchmarkSumSq(b *testing.B) {
	benchVec(b, 4, func(x, _, _ []float32) { vecSink += SumSq(x) })
}
func BenchmarkAxpy(b *testing.B) {
	benchVec(b, 12, func(x, y, _ []float32) { Axpy(1e-3, x, y) })
}
func BenchmarkScale(b *testing.B) {
	benchVec(b, 8, func(_, _, z []float32) { Scale(1, z) })
}
func BenchmarkAdd(b *testing.B) {
	benchVec(b, 12, func(x, y, z []float32) { Add(z, x, y) })
}
