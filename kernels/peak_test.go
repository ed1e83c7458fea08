package kernels

import (
	"os"
	"testing"
)

func TestPeakGFLOPS(t *testing.T) {
	if os.Getenv("WHALE_LONG_TESTS") != "1" && testing.Short() {
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
