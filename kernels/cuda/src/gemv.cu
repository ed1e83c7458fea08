// Products with few rows: out (m,n) = a (m,k) · b (n,k)ᵀ for m below
// GEMV_MAX_M, b float or bf16. One warp per output column j reads b's row
// j once for all m rows; lane l sums positions l, l+32, ... and the lanes
// are added in a fixed butterfly. A row's result is the same operations
// whatever m is: the row invariance kernels.RowInvariantRows promises.
#include "common.cuh"

#define GEMV_MAX_M 24
#define GEMV_WARPS 8

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(unsigned short h) { return bf16_widen(h); }

template <typename TB>
__device__ __forceinline__ void gemv_nt(float* out, const float* a, const TB* b, i64 m, i64 k, i64 n, i64 acc) {
	int lane = threadIdx.x & 31;
	i64 j = (i64)blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5);
	if (j >= n) return; // whole warps leave together
	float s[GEMV_MAX_M];
#pragma unroll
	for (int i = 0; i < GEMV_MAX_M; i++) s[i] = 0;
	const TB* bj = b + j * k;
	for (i64 p = lane; p < k; p += 32) {
		float y = widen(bj[p]);
#pragma unroll
		for (int i = 0; i < GEMV_MAX_M; i++)
			if (i < m) s[i] += a[i * k + p] * y;
	}
#pragma unroll
	for (int i = 0; i < GEMV_MAX_M; i++) {
		if (i >= m) break;
		float v = s[i];
		for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
		if (lane == 0) out[i * n + j] = acc ? out[i * n + j] + v : v;
	}
}

// whale_gemv_nt_f32 / whale_gemv_nt_bf16: grid ceil(n/GEMV_WARPS) blocks
// of 32·GEMV_WARPS threads; m < GEMV_MAX_M.
extern "C" __global__ void __launch_bounds__(32 * GEMV_WARPS) whale_gemv_nt_f32(float* out, const float* a, const float* b, i64 m, i64 k,
                                                                             i64 n, i64 acc) {
	gemv_nt<float>(out, a, b, m, k, n, acc);
}

extern "C" __global__ void __launch_bounds__(32 * GEMV_WARPS) whale_gemv_nt_bf16(float* out, const float* a, const unsigned short* b,
                                                                              i64 m, i64 k, i64 n, i64 acc) {
	gemv_nt<unsigned short>(out, a, b, m, k, n, acc);
}
