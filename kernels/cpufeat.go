package kernels

import "os"

// useAsm selects the assembly kernels. It is fixed at init from the CPU's
// features and WHALE_NOASM; tests flip it to run both twins.
var useAsm = hasAVX2FMA() && os.Getenv("WHALE_NOASM") != "1"

// HasAVX2FMA reports whether this CPU (and OS) supports AVX2 and FMA, the
// features the fast amd64 kernels need. It is false on other architectures.
func HasAVX2FMA() bool { return hasAVX2FMA() }

// KernelName describes the kernels in use, for reports and benchmarks.
func KernelName() string {
	if useAsm {
		return "amd64 AVX2+FMA assembly (GEMM 6x16 micro-kernel)"
	}
	if hasAVX2FMA() {
		return "pure Go (WHALE_NOASM=1)"
	}
	return "pure Go (no AVX2+FMA)"
}
