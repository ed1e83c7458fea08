package kernels

import "os"

// useAsm selects the assembly kernels. It is fixed at init from the CPU's
// features and WHALE_NOASM; tests flip it to run both twins.
var useAsm = hasAVX2FMA() && os.Getenv("WHALE_NOASM") != "1"

// useAVX512 selects, among the assembly kernels, the AVX-512 GEMM (its own
// register tile and loop, gemm512.go) over the AVX2 one. WHALE_NOAVX512=1
// keeps the AVX2 kernels on a CPU that has AVX-512, for comparisons. Both
// compute every element as the same FMA chain, so the choice changes no
// bit of any result.
var useAVX512 = useAsm && hasAVX512() && os.Getenv("WHALE_NOAVX512") != "1"

// HasAVX512 reports whether this CPU (and OS) supports AVX-512F.
func HasAVX512() bool { return hasAVX512() }

// VectorBits is the width of the FMAs the GEMM kernels in use issue: 512
// with the AVX-512 kernels, 256 with AVX2+FMA, 32 for the pure-Go loops
// (kernels/bench times its FMA peak at this width).
func VectorBits() int {
	switch {
	case useAVX512:
		return 512
	case useAsm:
		return 256
	}
	return 32
}

// KernelName describes the kernels in use, for reports and benchmarks.
func KernelName() string {
	switch {
	case useAVX512:
		return "amd64 AVX-512 assembly (GEMM 12x32 and one-row kernels; AVX2+FMA for the rest)"
	case useAsm && hasAVX512():
		return "amd64 AVX2+FMA assembly (GEMM 6x16 micro-kernel; WHALE_NOAVX512=1)"
	case useAsm:
		return "amd64 AVX2+FMA assembly (GEMM 6x16 micro-kernel)"
	case hasAVX2FMA():
		return "pure Go (WHALE_NOASM=1)"
	}
	return "pure Go (no AVX2+FMA)"
}

// asm8 is how many leading elements of n an 8-lane assembly kernel takes
// (the rest go to its Go twin): n rounded down to a multiple of 8 when the
// assembly kernels run, else none.
func asm8(n int) int {
	if useAsm {
		return n &^ 7
	}
	return 0
}
