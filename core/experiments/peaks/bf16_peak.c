// bf16_peak: one core's peak of the AVX-512 BF16 dot product (VDPBF16PS:
// 32 bfloat16 pairs summed into 16 float32 lanes, 64 FLOP an instruction)
// against the float32 FMA (VFMADD231PS, 32 FLOP), each over 12 independent
// accumulators so that throughput, not latency, bounds it. The figure
// says what a bfloat16 GEMM could gain over kern12x32 on a machine with
// avx512_bf16 (docs/PERFORMANCE.md, issue 41).
//
//   gcc -O3 -funroll-all-loops -march=native bf16_peak.c -o bf16_peak && ./bf16_peak
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
	const long n = 200000000 / 12;
	__m512 acc[12];
	for (int i = 0; i < 12; i++) acc[i] = _mm512_set1_ps(0.001f * i);
	__m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(0.0001f);
	double t = now();
	for (long k = 0; k < n; k++)
		for (int i = 0; i < 12; i++) acc[i] = _mm512_fmadd_ps(a, acc[i], b);
	double dt = now() - t;
	float sink = 0;
	for (int i = 0; i < 12; i++) sink += _mm512_reduce_add_ps(acc[i]);
	printf("float32 FMA   %.1f GFLOP/s (sink %g)\n", n * 12.0 * 16 * 2 / dt / 1e9, sink);

	__m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3f80);
	for (int i = 0; i < 12; i++) acc[i] = _mm512_set1_ps(0.001f * i);
	t = now();
	for (long k = 0; k < n; k++)
		for (int i = 0; i < 12; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, y);
	dt = now() - t;
	sink = 0;
	for (int i = 0; i < 12; i++) sink += _mm512_reduce_add_ps(acc[i]);
	printf("bfloat16 DPBF16 %.1f GFLOP/s (sink %g)\n", n * 12.0 * 32 * 2 / dt / 1e9, sink);
	return 0;
}
