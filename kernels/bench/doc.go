// Package bench measures the machine's bounds and the kernels' speed for
// `whale bench`: the float32 FMA peak at the GEMM's vector width
// (PeakGFLOPS), the memory read bandwidth (ReadGBPS, ReadGBPSOver), and
// best-of-N GEMM speeds on the CPU kernels or through a backend (Gemm,
// GemmOn). It times; it computes nothing a model uses, and the kernels
// package must never import it.
package bench
