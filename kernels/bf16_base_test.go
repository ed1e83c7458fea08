package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

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

// BenchmarkGemmBF16NN is the input gradient of a Qwen3-0.6B projection
// over 1,024 tokens (dh = dy·W, m 1024, k 1024, n 3072) with W in bf16,
// beside Gemm NN on the float32 W: the cost of widening while packing.
func BenchmarkGemmBF16NN(b *testing.B) {
	const m, k, n = 1024, 1024, 3072
	r := rand.New(rand.NewPCG(1, 1))
	a := make([]float32, m*k)
	randFill(r, a)
	wh := make([]BF16, k*n)
	randBF16(r, wh)
	wf := make([]float32, k*n)
	FromBF16(wf, wh)
	out := make([]float32, m*n)
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"bf16", func() { GemmBF16NN(out, a, wh, m, k, n, false) }},
		{"f32", func() { Gemm(NN, out, a, wf, m, k, n, false) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.run()
			}
			b.ReportMetric(2*m*k*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
