//go:build !unix

package procstat

import "time"

// CPUTime is not measured on this platform (see cpu_unix.go).
func CPUTime() time.Duration { return 0 }

// PeakRSS is not measured on this platform (see cpu_unix.go).
func PeakRSS() int64 { return 0 }

// ResetPeakRSS cannot reset anything on this platform.
func ResetPeakRSS() bool { return false }
