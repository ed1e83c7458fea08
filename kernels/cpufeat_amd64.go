package kernels

import "golang.org/x/sys/cpu"

// x/sys/cpu reports AVX2 only when the OS saves the YMM state too.
func hasAVX2FMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// hasAVX512 reports AVX-512F with the OS saving the ZMM state (x/sys/cpu
// checks XCR0 before it sets the flag).
func hasAVX512() bool { return hasAVX2FMA() && cpu.X86.HasAVX512F }
