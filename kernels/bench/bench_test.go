package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"whale/kernels"
)

// The figures below are timings, so they are benchmarks: each reports its
// figure with b.ReportMetric (go test -run '^$' -bench . ./kernels/bench).

func BenchmarkPeakGFLOPS(b *testing.B) {
	var p float64
	for range b.N {
		p = PeakGFLOPS()
	}
	b.ReportMetric(p, "GFLOP/s")
	b.ReportMetric(float64(PeakVectorBits()), "bits")
	b.ReportMetric(float64(kernels.Threads()), "threads")
}

func BenchmarkFMALoop(b *testing.B) {
	var flops float64
	for range b.N {
		flops += peakChunk()
	}
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkReadGBPS: the 64 MiB sweep, a buffer below the 1 MiB floor
// (timed at the floor) and one that is not a whole number of huge pages.
func BenchmarkReadGBPS(b *testing.B) {
	for _, bytes := range []int64{4 * readFloats, 0, 3 << 20} {
		b.Run(fmt.Sprintf("bytes=%d", bytes), func(b *testing.B) {
			var g float64
			for range b.N {
				g = ReadGBPSOver(bytes)
			}
			b.ReportMetric(g, "GB/s")
		})
	}
}

// BenchmarkGemm covers the transformer shapes: 1024 tokens times the model
// widths, in every layout, plus decode-sized M.
func BenchmarkGemm(b *testing.B) {
	dims := []int{256, 512, 704, 768}
	for _, layout := range []kernels.Layout{kernels.NN, kernels.NT, kernels.TN} {
		for _, k := range dims {
			for _, n := range dims {
				benchGemm(b, layout, 1024, k, n)
			}
		}
	}
	for _, m := range []int{1, 4, 16, 64} {
		for _, layout := range []kernels.Layout{kernels.NN, kernels.NT, kernels.TN} {
			benchGemm(b, layout, m, 768, 768)
		}
	}
}

func benchGemm(b *testing.B, layout kernels.Layout, m, k, n int) {
	b.Run(fmt.Sprintf("%v/m%d_k%d_n%d", layout, m, k, n), func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 1))
		x, y, out := randomSlice(r, m*k), randomSlice(r, k*n), make([]float32, m*n)
		b.ResetTimer()
		for range b.N {
			kernels.Gemm(layout, out, x, y, m, k, n, false)
		}
		b.ReportMetric(2*float64(m)*float64(k)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

// BenchmarkGemmBF16NTRow: one row against bf16 weights (decoding), in GB/s
// of weights read.
func BenchmarkGemmBF16NTRow(b *testing.B) {
	for _, s := range [][2]int{{768, 768}, {768, 2048}, {2048, 768}, {768, 32000}} {
		k, n := s[0], s[1]
		b.Run(fmt.Sprintf("k%d_n%d", k, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			x := randomSlice(r, k)
			w := make([]kernels.BF16, k*n)
			kernels.ToBF16(w, randomSlice(r, k*n))
			out := make([]float32, n)
			b.ResetTimer()
			for range b.N {
				kernels.GemmBF16NT(out, x, w, 1, k, n, false)
			}
			b.ReportMetric(float64(2*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func TestSumBlockMatchesTwin(t *testing.T) {
	defer func(saved bool) { useAsm = saved }(useAsm)
	for _, asm := range []bool{false, true} {
		if asm && PeakVectorBits() < 256 {
			continue
		}
		useAsm = asm
		for _, n := range []int{0, 1, 7, 63, 64, 65, 130, 1000} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i%7) - 2 // small integers: every order sums exactly
			}
			var want float32
			for _, v := range x {
				want += v
			}
			if got := sumBlock(x); got != want {
				t.Fatalf("sumBlock (asm %v) of %d = %v, want %v", asm, n, got, want)
			}
		}
	}
}

func TestGemmOfAnEmptyShapeIsZero(t *testing.T) {
	for _, s := range [][3]int{{0, 4, 4}, {4, 0, 4}, {4, 4, 0}} {
		if g := Gemm(kernels.NN, s[0], s[1], s[2], 0); g != 0 {
			t.Errorf("Gemm of %v = %v GFLOP/s, want 0", s, g)
		}
		if g, err := GemmOn(kernels.NewCPU(), kernels.NN, s[0], s[1], s[2], 0); g != 0 || err != nil {
			t.Errorf("GemmOn of %v = %v, %v; want 0, nil", s, g, err)
		}
	}
}

// failingSync is the CPU backend as an asynchronous one whose queue has
// failed.
type failingSync struct{ *kernels.CPU[float32] }

var errQueue = errors.New("queue failed")

func (failingSync) Sync() error { return errQueue }

func TestGemmOnReportsTheBackendsError(t *testing.T) {
	g, err := GemmOn(failingSync{kernels.NewCPU()}, kernels.NT, 3, 5, 7, 0)
	if !errors.Is(err, errQueue) || g != 0 {
		t.Fatalf("GemmOn on a failing backend = %v, %v; want 0 and its error", g, err)
	}
}
