//go:build !unix

package experiments

import "time"

// cpuTime is not measured on this platform (see cpu_unix.go).
func cpuTime() time.Duration { return 0 }

// peakRSS is not measured on this platform (see cpu_unix.go).
func peakRSS() int64 { return 0 }
