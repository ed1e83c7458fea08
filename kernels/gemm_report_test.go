package kernels

import (
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestReportSpeeds prints best-of-N speeds of the shapes that matter, for a
// person tuning the kernels on a shared machine. It only runs when
// WHALE_KERNEL_REPORT=1 and asserts nothing.
func TestReportSpeeds(t *testing.T) {
	if os.Getenv("WHALE_KERNEL_REPORT") != "1" {
		t.Skip("set WHALE_KERNEL_REPORT=1 to print kernel speeds")
	}
	t.Logf("kernels: %s, threads %d", KernelName(), Threads())
	dims := []int{256, 512, 704, 768}
	for _, layout := range []Layout{NN, NT, TN} {
		for _, k := range dims {
			for _, n := range dims {
				t.Logf("Gemm %v m=1024 k=%d n=%d: %6.1f GFLOP/s", layout, k, n, BenchGemm(layout, 1024, k, n, 100*time.Millisecond))
			}
		}
	}
	for _, m := range []int{1, 4, 16, 64} {
		for _, layout := range []Layout{NN, NT, TN} {
			t.Logf("Gemm %v m=%d k=768 n=768: %6.1f GFLOP/s", layout, m, BenchGemm(layout, m, 768, 768, 50*time.Millisecond))
		}
	}
	for _, s := range [][2]int{{768, 768}, {768, 2048}, {2048, 768}, {768, 32000}} {
		k, n := s[0], s[1]
		r := rand.New(rand.NewPCG(1, 1))
		x := make([]float32, k)
		randFill(r, x)
		w := make([]BF16, k*n)
		randBF16(r, w)
		out := make([]float32, n)
		best := time.Hour
		start := time.Now()
		for runs := 0; runs < 3 || time.Since(start) < 200*time.Millisecond; runs++ {
			t0 := time.Now()
			GemmBF16NT(out, x, w, 1, k, n, false)
			best = min(best, time.Since(t0))
		}
		t.Logf("GemmBF16NT m=1 k=%d n=%d: %6.1f GB/s", k, n, float64(2*k*n)/best.Seconds()/1e9)
	}
}
