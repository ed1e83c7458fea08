package kernels

import "golang.org/x/sys/cpu"

// x/sys/cpu reports AVX2 only when the OS saves the YMM state too.
func hasAVX2FMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }
