package kernels

import "math"

// BF16 is a bfloat16 number: the top half of an IEEE float32 (sign, 8
// exponent bits, 7 mantissa bits). Weights kept as bf16 halve the memory
// that batch-1 sampling has to stream.
type BF16 = uint16

// ToBF16 converts src to bf16 in dst, rounding to nearest with ties to
// even. NaNs stay NaN (quieted, sign kept); values beyond the largest bf16
// round to ±Inf. It panics if the lengths differ.
func ToBF16(dst []BF16, src []float32) {
	sameLen("ToBF16", len(dst), len(src))
	for i, f := range src {
		dst[i] = bf16FromFloat(f)
	}
}

func bf16FromFloat(f float32) BF16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		// Truncating could clear every mantissa bit left and turn the NaN
		// into Inf; setting the quiet bit keeps it a NaN.
		return BF16(u>>16) | 0x0040
	}
	// Adding 0x7fff rounds halves down and everything above up; adding the
	// kept lowest bit as well turns ties towards even.
	return BF16((u + 0x7fff + (u>>16)&1) >> 16)
}

// FromBF16 widens src into dst exactly. It panics if the lengths differ.
func FromBF16(dst []float32, src []BF16) {
	sameLen("FromBF16", len(dst), len(src))
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

var bf16Tiles = dotTileKernels[BF16]{dotTile3x4BF16, dotTile1x8BF16, bf16ToFloat}

func bf16ToFloat(h BF16) float32 { return math.Float32frombits(uint32(h) << 16) }

// GemmBF16NT computes out[m,n] = a[m,k] · b[n,k]ᵀ with b stored as bf16,
// adding to out when accumulate is set; k = 0 clears out unless
// accumulate. b is widened on the fly inside the kernel, so the product
// streams half the bytes of a float32 one: the path for sampling with bf16
// weights. With 24 rows or more B is instead widened into the packed
// panels of Gemm's micro-kernel (prefill). Like Gemm it splits N or M over
// threads, never K, so results do not depend on the thread count. It
// panics if a slice is too short.
func GemmBF16NT(out, a []float32, b []BF16, m, k, n int, accumulate bool) {
	checkGemm("GemmBF16NT", NT, len(out), len(a), len(b), m, k, n)
	if trivialGemm(out, m, k, n, accumulate) {
		return
	}
	if m >= smallMNT {
		// Enough rows to pay for widening B once into packed panels and
		// running the GEMM micro-kernel.
		g := newGemmJob(NT, out[:m*n], a[:m*k], nil, m, k, n, accumulate)
		g.bh = b[:k*n]
		g.runParallel()
		return
	}
	dotTilesNT(out[:m*n], a[:m*k], b[:k*n], m, k, n, accumulate, &bf16Tiles, false)
}

// GemmBF16NN computes out[m,n] = a[m,k] · b[k,n] with b stored as bf16,
// adding to out when accumulate is set; k = 0 clears out unless
// accumulate. B is widened exactly into the packed panels of Gemm's
// micro-kernel, so the result has the bits of Gemm NN on the widened B
// (the backward pass of a projection whose frozen weights are bf16:
// dx = dy·W). It splits N or M over threads, never K, and panics if a
// slice is too short.
func GemmBF16NN(out, a []float32, b []BF16, m, k, n int, accumulate bool) {
	checkGemm("GemmBF16NN", NN, len(out), len(a), len(b), m, k, n)
	if trivialGemm(out, m, k, n, accumulate) {
		return
	}
	g := newGemmJob(NN, out[:m*n], a[:m*k], nil, m, k, n, accumulate)
	g.bh, g.directB = b[:k*n], false
	g.runParallel()
}

// GemmBF16NNRef is the plain reference of GemmBF16NN.
func GemmBF16NNRef[T float32 | float64](out, a []T, b []BF16, m, k, n int, accumulate bool) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s T
			for p := 0; p < k; p++ {
				s += a[i*k+p] * T(bf16ToFloat(b[p*n+j]))
			}
			if accumulate {
				out[i*n+j] += s
			} else {
				out[i*n+j] = s
			}
		}
	}
}

// GemmBF16NTRef is the plain reference of GemmBF16NT, generic so that a
// float64 instance can check it.
func GemmBF16NTRef[T float32 | float64](out, a []T, b []BF16, m, k, n int, accumulate bool) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s T
			for p := 0; p < k; p++ {
				s += a[i*k+p] * T(bf16ToFloat(b[j*k+p]))
			}
			if accumulate {
				out[i*n+j] += s
			} else {
				out[i*n+j] = s
			}
		}
	}
}
