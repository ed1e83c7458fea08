package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkGemm covers the transformer shapes: 1024 tokens times the model
// widths, in every layout, plus decode-sized M.
func BenchmarkGemm(b *testing.B) {
	dims := []int{256, 512, 704, 768}
	for _, layout := range []Layout{NN, NT, TN} {
		for _, k := range dims {
			for _, n := range dims {
				benchGemm(b, layout, 1024, k, n)
			}
		}
	}
	for _, m := range []int{1, 4, 16, 64} {
		for _, layout := range []Layout{NN, NT, TN} {
			benchGemm(b, layout, m, 768, 768)
		}
	}
}

func benchGemm(b *testing.B, layout Layout, m, k, n int) {
	b.Run(fmt.Sprintf("%v/m%d_k%d_n%d", layout, m, k, n), func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 1))
		x := make([]float32, m*k)
		y := make([]float32, k*n)
		out := make([]float32, m*n)
		randFill(r, x)
		randFill(r, y)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			Gemm(layout, out, x, y, m, k, n, false)
		}
		sec := time.Since(start).Seconds()
		b.ReportMetric(2*float64(m)*float64(k)*float64(n)*float64(b.N)/sec/1e9, "GFLOP/s")
	})
}
