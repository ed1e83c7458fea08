// Shared definitions of whale's CUDA kernels. Every kernel takes its sizes
// as 64-bit integers (the Go side passes every argument in an 8-byte slot)
// and indexes memory with 64-bit arithmetic: rows·V of a logits tensor
// passes 2^31.
#pragma once

typedef long long i64;

// Block size of the elementwise and reduction kernels. The Go side launches
// with the same constant (threads in launch.go).
#define THREADS 256

// A grid-stride loop over n elements: the grid is sized from n alone, so a
// launch never depends on data.
#define FOR_EACH(i, n) \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)

// bf16_widen returns the float whose top half is h (exact).
__device__ __forceinline__ float bf16_widen(unsigned short h) {
	return __uint_as_float(((unsigned int)h) << 16);
}

// block_sum_double adds v over the block in a fixed tree: the same inputs
// give the same bits. sh holds blockDim.x doubles; every thread gets the
// sum. blockDim.x must be a power of two.
__device__ __forceinline__ double block_sum_double(double v, double* sh) {
	unsigned t = threadIdx.x;
	sh[t] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s) sh[t] += sh[t + s];
		__syncthreads();
	}
	double r = sh[0];
	__syncthreads();
	return r;
}

// block_max_float is block_sum_double for the maximum of floats.
__device__ __forceinline__ float block_max_float(float v, float* sh) {
	unsigned t = threadIdx.x;
	sh[t] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s) sh[t] = fmaxf(sh[t], sh[t + s]);
		__syncthreads();
	}
	float r = sh[0];
	__syncthreads();
	return r;
}
