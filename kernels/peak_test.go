package kernels

import (
	"testing"

	"whale/internal/longtests"
)

func TestPeakGFLOPS(t *testing.T) {
	if !longtests.Enabled() && testing.Short() {
		t.Skip("short mode")
	}
	p := PeakGFLOPS()
	// No speed is asserted (the machine is shared); a positive finite value
	// shows the loop ran and was counted.
	if !(p > 0 && p < 1e6) {
		t.Fatalf("PeakGFLOPS() = %v, want a positive finite rate", p)
	}
	t.Logf("peak %.1f GFLOP/s on %d threads (%s)", p, Threads(), KernelName())
}

func BenchmarkFMALoop(b *testing.B) {
	for range b.N {
		peakChunk()
	}
	b.ReportMetric(float64(12*8*2*peakIters)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func TestReadGBPS(t *testing.T) {
	if !longtests.Enabled() && testing.Short() {
		t.Skip("short mode")
	}
	g := ReadGBPS()
	if !(g > 0 && g < 1e5) {
		t.Fatalf("ReadGBPS() = %v, want a positive finite rate", g)
	}
	t.Logf("read %.1f GB/s on %d threads, FMA width %d bits", g, Threads(), PeakVectorBits())
	for _, n := range []int64{0, 3 << 20} { // below the 1 MiB floor; not a whole page
		if g := ReadGBPSOver(n); !(g > 0 && g < 1e5) {
			t.Fatalf("ReadGBPSOver(%d) = %v, want a positive finite rate", n, g)
		}
	}
}

func TestSumBlockMatchesTwin(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
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
				t.Fatalf("sumBlock of %d = %v, want %v", n, got, want)
			}
		}
	})
}
