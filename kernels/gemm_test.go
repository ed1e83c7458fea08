package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// guardPad is how many sentinel elements surround every slice a test hands
// to a kernel. Outputs are checked for an unchanged sentinel; inputs are
// surrounded by NaN so that a kernel reading past its operand poisons its
// result.
const guardPad = 19

var guardBits uint32 = 0x7fc0beef // a quiet NaN with a payload no kernel makes

// padded returns a slice of n elements whose surroundings hold fill, and the
// backing array to check them later.
func padded(n int, fill float32) (inner, whole []float32) {
	whole = make([]float32, n+2*guardPad)
	for i := range whole {
		whole[i] = fill
	}
	return whole[guardPad : guardPad+n], whole
}

func checkGuards(t *testing.T, whole []float32, n int, what string) {
	t.Helper()
	for i, v := range whole {
		if i >= guardPad && i < guardPad+n {
			continue
		}
		if math.Float32bits(v) != guardBits {
			t.Fatalf("%s: guard element %d (relative %d) overwritten with %v", what, i, i-guardPad, v)
		}
	}
}

func randFill(r *rand.Rand, x []float32) {
	for i := range x {
		x[i] = 2*r.Float32() - 1
	}
}

func maxAbs(x []float32) float64 {
	var m float64
	for _, v := range x {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}

func widen(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

// eachImpl runs fn with the pure-Go kernels and, where the CPU has them,
// with the AVX2 assembly and with the AVX-512 GEMM.
func eachImpl(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	saved, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = saved, saved512 }()
	useAsm, useAVX512 = false, false
	t.Run("go", fn)
	if hasAVX2FMA() {
		useAsm = true
		t.Run("asm", fn)
	}
	if hasAVX512() {
		useAVX512 = true
		t.Run("avx512", fn)
	}
}

func withThreads(n int, fn func()) {
	saved := Threads()
	defer SetThreads(saved)
	SetThreads(n)
	fn()
}

// gemmTolerance bounds |Gemm − exact| for one element. A float32 sum of k
// products of size ≤ ma·mb, rounded at every step, drifts like a random
// walk: about u·σ·k/√2 with u = 6e-8 and σ ≈ ma·mb/3 for uniform data, i.e.
// ≈ 2e-6 at k = 130. The bound 1e-5·√k·ma·mb is ≈ 60× that there and
// grows faster than the drift only through the constant, yet a single
// missing or doubled product (≈ ma·mb/4 on average) is 2000× larger. The
// accumulated output c0 adds one rounding of its own size.
func gemmTolerance(k int, ma, mb, mc float64) float64 {
	return 1e-5 * (math.Sqrt(float64(k))*ma*mb + mc)
}

// testGemmCase runs one product through Gemm on guarded slices and checks
// it against the float64 reference.
func testGemmCase(t *testing.T, r *rand.Rand, layout Layout, m, k, n int, acc bool) {
	t.Helper()
	a, aw := padded(m*k, math.Float32frombits(guardBits))
	b, bw := padded(k*n, math.Float32frombits(guardBits))
	out, ow := padded(m*n, math.Float32frombits(guardBits))
	randFill(r, a)
	randFill(r, b)
	randFill(r, out)
	want := widen(out)
	GemmRef(layout, want, widen(a), widen(b), m, k, n, acc)
	c0 := maxAbs(out)
	if !acc {
		c0 = 0
	}
	Gemm(layout, out, a, b, m, k, n, acc)
	what := fmt.Sprintf("Gemm %v m=%d k=%d n=%d acc=%v", layout, m, k, n, acc)
	checkGuards(t, ow, m*n, what+" out")
	checkGuards(t, aw, m*k, what+" a")
	checkGuards(t, bw, k*n, what+" b")
	tol := gemmTolerance(k, maxAbs(a), maxAbs(b), c0)
	for i, g := range out {
		if d := math.Abs(float64(g) - want[i]); !(d <= tol) {
			t.Fatalf("%s: out[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", what, i/n, i%n, g, want[i], d, tol)
		}
	}
}

var gemmSizes = []int{1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 130}

func TestGemmMatchesReference(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, layout := range []Layout{NN, NT, TN} {
			for _, acc := range []bool{false, true} {
				// Every combination of the small sizes: all edge-tile shapes.
				for _, m := range gemmSizes[:9] {
					for _, k := range gemmSizes[:9] {
						for _, n := range gemmSizes[:9] {
							testGemmCase(t, r, layout, m, k, n, acc)
						}
					}
				}
				// A sample of the full grid.
				for range 40 {
					m := gemmSizes[r.IntN(len(gemmSizes))]
					k := gemmSizes[r.IntN(len(gemmSizes))]
					n := gemmSizes[r.IntN(len(gemmSizes))]
					testGemmCase(t, r, layout, m, k, n, acc)
				}
				// Shapes that cross the blocking: several K blocks, several
				// M blocks, more than one N block, the small-M NT switch.
				for _, s := range [][3]int{
					{150, 300, 40}, {7, 520, 33}, {23, 257, 9}, {24, 100, 20}, {25, 9, 70},
					{3, 3, 3100}, {145, 17, 5}, {1, 768, 64},
				} {
					testGemmCase(t, r, layout, s[0], s[1], s[2], acc)
				}
			}
		}
	})
}

func TestGemmEmpty(t *testing.T) {
	out := []float32{7, 7}
	Gemm(NN, out, nil, nil, 1, 0, 2, true)
	if out[0] != 7 || out[1] != 7 {
		t.Fatalf("k=0 with accumulate changed out: %v", out)
	}
	Gemm(NT, out, nil, nil, 1, 0, 2, false)
	if out[0] != 0 || out[1] != 0 {
		t.Fatalf("k=0 without accumulate left out = %v, want zeros", out)
	}
	Gemm(TN, nil, nil, nil, 0, 5, 0, false) // must not panic
	defer func() {
		if recover() == nil {
			t.Fatal("short operand did not panic")
		}
	}()
	Gemm(NN, make([]float32, 4), make([]float32, 3), make([]float32, 4), 2, 2, 2, false)
}

// TestGemmThreadsBitIdentical checks the determinism contract: 1, 2 and 3
// threads give the same bits, on shapes that take each parallel split.
func TestGemmThreadsBitIdentical(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, layout := range []Layout{NN, NT, TN} {
			for _, s := range [][3]int{{150, 600, 200}, {40, 64, 500}, {5, 300, 333}, {1, 700, 900}, {400, 300, 100}} {
				m, k, n := s[0], s[1], s[2]
				a := make([]float32, m*k)
				b := make([]float32, k*n)
				randFill(r, a)
				randFill(r, b)
				c0 := make([]float32, m*n)
				randFill(r, c0)
				var ref []float32
				for _, th := range []int{1, 2, 3} {
					out := append([]float32(nil), c0...)
					withThreads(th, func() { Gemm(layout, out, a, b, m, k, n, true) })
					if ref == nil {
						ref = out
						continue
					}
					for i := range out {
						if math.Float32bits(out[i]) != math.Float32bits(ref[i]) {
							t.Fatalf("%v m=%d k=%d n=%d: out[%d] = %v with %d threads, %v with 1", layout, m, k, n, i, out[i], th, ref[i])
						}
					}
				}
			}
		}
	})
}

func FuzzGemm(f *testing.F) {
	f.Add(uint64(1), uint8(0), uint8(5), uint8(17), uint8(33), false)
	f.Add(uint64(2), uint8(1), uint8(1), uint8(1), uint8(1), true)
	f.Add(uint64(3), uint8(2), uint8(130), uint8(7), uint8(64), true)
	f.Fuzz(func(t *testing.T, seed uint64, layout, m, k, n uint8, acc bool) {
		r := rand.New(rand.NewPCG(seed, 5))
		l := Layout(layout % 3)
		mm, kk, nn := 1+int(m)%130, 1+int(k)%130, 1+int(n)%130
		eachImpl(t, func(t *testing.T) { testGemmCase(t, r, l, mm, kk, nn, acc) })
	})
}
