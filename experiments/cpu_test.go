package experiments

import (
	"os"
	"testing"
)

// The process measures its own CPU time and, where /proc reports it, its
// peak resident memory: the bench's cores-busy and memory figures.
func TestProcessReportsCPUTimeAndPeakMemory(t *testing.T) {
	before := cpuTime()
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i ^ (x >> 3)
	}
	if after := cpuTime(); before == 0 && after == 0 {
		t.Log("CPU time is not measured on this platform")
	} else if after <= before && x != 0 {
		t.Fatalf("cpu time %v did not grow over a busy loop", cpuTime())
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if rss := peakRSS(); rss < 1<<20 {
			t.Fatalf("peak RSS %d bytes, want at least a megabyte", rss)
		}
	}
}
