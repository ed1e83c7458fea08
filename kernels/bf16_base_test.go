package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// testGemmBF16NNCase checks GemmBF16NN against the float64 reference and,
// bit for bit, against Gemm NN on the widened B: widening while packing
// must be the only difference between the two.
func testGemmBF16NNCase(t *testing.T, r *rand.Rand, m, k, n int, acc bool) {
	t.Helper()
	a, aw := padded(m*k, math.Float32frombits(guardBits))
	randFill(r, a)
	bw := make([]BF16, k*n+2*guardPad)
	for i := range bw {
		bw[i] = 0x7fc1 // NaN guards: reading past b poisons the result
	}
	b := bw[guardPad : guardPad+k*n]
	randBF16(r, b)
	out, ow := padded(m*n, math.Float32frombits(guardBits))
	randFill(r, out)
	want := widen(out)
	GemmBF16NNRef(want, widen(a), b, m, k, n, acc)
	same := append([]float32(nil), out...)
	wide := make([]float32, k*n)
	FromBF16(wide, b)
	Gemm(NN, same, a, wide, m, k, n, acc)
	c0 := maxAbs(out)
	if !acc {
		c0 = 0
	}
	GemmBF16NN(out, a, b, m, k, n, acc)
	what := fmt.Sprintf("GemmBF16NN m=%d k=%d n=%d acc=%v", m, k, n, acc)
	checkGuards(t, ow, m*n, what+" out")
	checkGuards(t, aw, m*k, what+" a")
	tol := gemmTolerance(k, maxAbs(a), 1, c0) // |b| ≤ 1
	for i, g := range out {
		if d := math.Abs(float64(g) - want[i]); !(d <= tol) {
			t.Fatalf("%s: out[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", what, i/n, i%n, g, want[i], d, tol)
		}
		if math.Float32bits(g) != math.Float32bits(same[i]) {
			t.Fatalf("%s: out[%d,%d] = %v, Gemm NN on the widened B gives %v", what, i/n, i%n, g, same[i])
		}
	}
}

func TestGemmBF16NNMatchesReference(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, acc := range []bool{false, true} {
			for _, m := range gemmSizes[:9] {
				for _, k := range gemmSizes[:9] {
					for _, n := range gemmSizes[:9] {
						testGemmBF16NNCase(t, r, m, k, n, acc)
					}
				}
			}
			for range 40 {
				m := gemmSizes[r.IntN(len(gemmSizes))]
				k := gemmSizes[r.IntN(len(gemmSizes))]
				n := gemmSizes[r.IntN(len(gemmSizes))]
				testGemmBF16NNCase(t, r, m, k, n, acc)
			}
			testGemmBF16NNCase(t, r, 100, 70, 9, acc)   // several row blocks
			testGemmBF16NNCase(t, r, 40, 300, 50, acc)  // two K blocks
			testGemmBF16NNCase(t, r, 3, 700, 130, acc)  // few rows: Gemm NN would read B in place
			testGemmBF16NNCase(t, r, 64, 96, 1030, acc) // several N blocks
		}
	})
}

func TestGemmBF16NNThreadsBitIdentical(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(25, 26))
		for _, s := range [][3]int{{64, 768, 1001}, {7, 203, 600}, {300, 96, 130}} {
			m, k, n := s[0], s[1], s[2]
			a := make([]float32, m*k)
			randFill(r, a)
			b := make([]BF16, k*n)
			randBF16(r, b)
			var ref []float32
			for _, th := range []int{1, 2, 3} {
				out := make([]float32, m*n)
				withThreads(th, func() { GemmBF16NN(out, a, b, m, k, n, false) })
				if ref == nil {
					ref = out
					continue
				}
				for i := range out {
					if math.Float32bits(out[i]) != math.Float32bits(ref[i]) {
						t.Fatalf("m=%d k=%d n=%d: out[%d] = %v with %d threads, %v with 1", m, k, n, i, out[i], th, ref[i])
					}
				}
			}
		}
	})
}

func FuzzGemmBF16NN(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint8(17), uint8(33), false)
	f.Add(uint64(2), uint8(40), uint8(64), uint8(9), true)
	f.Fuzz(func(t *testing.T, seed uint64, m, k, n uint8, acc bool) {
		r := rand.New(rand.NewPCG(seed, 27))
		mm, kk, nn := 1+int(m)%130, 1+int(k)%130, 1+int(n)%130
		eachImpl(t, func(t *testing.T) { testGemmBF16NNCase(t, r, mm, kk, nn, acc) })
	})
}

// The backend's bf16 ops for frozen weights: widening and the embedding
// lookup are exact, GemmBF16NN is the kernel's (float32) or the
// reference's (float64).
func TestCPUBF16BaseOps(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 29))
	const V, C, m, k, n = 11, 9, 5, 13, 7
	h := make([]BF16, V*C)
	randBF16(r, h)
	wide := make([]float32, V*C)
	FromBF16(wide, h)
	for _, be := range []interface {
		Backend
		BF16Base
	}{NewCPU(), NewCPU64()} {
		tab := be.AllocBF16(V * C)
		copy(opBF16s(tab), h)
		got := be.Alloc(V * C)
		be.FromBF16(got, tab)
		v := make([]float32, V*C)
		be.Store(v, got)
		for i := range v {
			if v[i] != wide[i] {
				t.Fatalf("%s: FromBF16[%d] = %v, want %v", be.Name(), i, v[i], wide[i])
			}
		}
		tokens := []int32{3, 0, 10, 3}
		emb := be.Alloc(len(tokens) * C)
		be.EmbeddingBF16(emb, tab, tokens, C)
		e := make([]float32, len(tokens)*C)
		be.Store(e, emb)
		for i, tok := range tokens {
			for j := 0; j < C; j++ {
				if e[i*C+j] != wide[int(tok)*C+j] {
					t.Fatalf("%s: EmbeddingBF16 row %d col %d = %v, want %v", be.Name(), i, j, e[i*C+j], wide[int(tok)*C+j])
				}
			}
		}
		a := make([]float32, m*k)
		randFill(r, a)
		b := make([]BF16, k*n)
		randBF16(r, b)
		ta, tb, to := be.Alloc(m*k), be.AllocBF16(k*n), be.Alloc(m*n)
		be.Load(ta, a)
		copy(opBF16s(tb), b)
		be.GemmBF16NN(to, ta, tb, m, k, n, false)
		out := make([]float32, m*n)
		be.Store(out, to)
		want := make([]float64, m*n)
		GemmBF16NNRef(want, widen(a), b, m, k, n, false)
		for i := range out {
			if d := math.Abs(float64(out[i]) - want[i]); d > gemmTolerance(k, maxAbs(a), 1, 0) {
				t.Fatalf("%s: GemmBF16NN[%d] = %v, want %v", be.Name(), i, out[i], want[i])
			}
		}
	}
}
