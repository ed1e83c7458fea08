package procstat

import (
	"os"
	"runtime/debug"
	"testing"
)

// The process measures its own CPU time and, where /proc reports it, its
// peak resident memory: the bench's cores-busy and memory figures.
func TestProcessReportsCPUTimeAndPeakMemory(t *testing.T) {
	before := CPUTime()
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x += i ^ (x >> 3)
	}
	if after := CPUTime(); before == 0 && after == 0 {
		t.Log("CPU time is not measured on this platform")
	} else if after <= before && x != 0 {
		t.Fatalf("cpu time %v did not grow over a busy loop", CPUTime())
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if rss := PeakRSS(); rss < 1<<20 {
			t.Fatalf("peak RSS %d bytes, want at least a megabyte", rss)
		}
	}
}

// After a reset the peak is the current resident memory, below a peak
// set by a large allocation that has been returned since.
func TestResetPeakRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("no /proc/self/clear_refs on this platform")
	}
	b := make([]byte, 256<<20)
	for i := range b {
		b[i] = byte(i)
	}
	high := PeakRSS()
	b = nil
	debug.FreeOSMemory()
	if !ResetPeakRSS() {
		t.Fatal("reset refused")
	}
	if low := PeakRSS(); low >= high-128<<20 {
		t.Fatalf("peak %d MB after the reset, %d MB before: not reset", low>>20, high>>20)
	}
}
