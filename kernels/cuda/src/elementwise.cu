// Elementwise ops, reductions over whole tensors and column sums.
#include "common.cuh"

// whale_to_bf16: dst = bf16(src), round to nearest even; NaN stays a
// (quiet) NaN with its sign; overflow rounds to ±Inf. Mirrors
// kernels.bf16FromFloat bit for bit.
extern "C" __global__ void whale_to_bf16(unsigned short* dst, const float* src, i64 n) {
	FOR_EACH(i, n) {
		unsigned int u = __float_as_uint(src[i]);
		unsigned int h;
		if ((u & 0x7fffffffu) > 0x7f800000u) {
			h = (u >> 16) | 0x0040u;
		} else {
			h = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
		}
		dst[i] = (unsigned short)h;
	}
}

// whale_widen_bf16: dst = float(src), exact.
extern "C" __global__ void whale_widen_bf16(float* dst, const unsigned short* src, i64 n) {
	FOR_EACH(i, n) { dst[i] = bf16_widen(src[i]); }
}

// whale_add: out = a + b (out may alias a or b: each element is read and
// written by one thread).
extern "C" __global__ void whale_add(float* out, const float* a, const float* b, i64 n) {
	FOR_EACH(i, n) { out[i] = a[i] + b[i]; }
}

// whale_scale: x *= s.
extern "C" __global__ void whale_scale(float* x, i64 n, float s) {
	FOR_EACH(i, n) { x[i] *= s; }
}

// SUMSQ_CHUNK is the number of elements one block of whale_sumsq covers;
// the Go side sums the per-block partials in block order.
#define SUMSQ_CHUNK 8192

// whale_sumsq: part[blk] = Σ x² over elements blk·SUMSQ_CHUNK.. of its
// chunk, in double. Grid: ceil(n/SUMSQ_CHUNK) blocks of THREADS.
extern "C" __global__ void __launch_bounds__(THREADS) whale_sumsq(double* part, const float* x, i64 n) {
	__shared__ double sh[THREADS];
	i64 lo = (i64)blockIdx.x * SUMSQ_CHUNK;
	i64 hi = min(n, lo + SUMSQ_CHUNK);
	double s = 0;
	for (i64 i = lo + threadIdx.x; i < hi; i += THREADS) {
		double v = x[i];
		s += v * v;
	}
	s = block_sum_double(s, sh);
	if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// whale_all_finite sets *bad to 1 if x holds a NaN or an Inf (*bad is
// cleared before the launch). Every writer writes the same value, so the
// result does not depend on which thread writes first.
extern "C" __global__ void whale_all_finite(int* bad, const float* x, i64 n) {
	FOR_EACH(i, n) {
		if (!isfinite(x[i])) *bad = 1;
	}
}

// whale_bias_add: out (rows,n) += bias (n) on every row.
extern "C" __global__ void whale_bias_add(float* out, const float* bias, i64 rows, i64 n) {
	FOR_EACH(i, rows * n) { out[i] += bias[i % n]; }
}

// COL_CHUNK is the number of rows one partial of a column sum covers, as
// kernels.redBlock on the CPU.
#define COL_CHUNK 64

// whale_colsum_partial: part (chunks,n) row c = Σ over rows c·COL_CHUNK.. of
// its chunk of src (rows,n), rows in order. Grid (ceil(n/THREADS), chunks).
extern "C" __global__ void whale_colsum_partial(float* part, const float* src, i64 rows, i64 n) {
	i64 j = (i64)blockIdx.x * THREADS + threadIdx.x;
	if (j >= n) return;
	i64 c = blockIdx.y;
	i64 hi = min(rows, (c + 1) * COL_CHUNK);
	float s = 0;
	for (i64 r = c * COL_CHUNK; r < hi; r++) s += src[r * n + j];
	part[c * n + j] = s;
}

// whale_rmsnorm_dw_partial is whale_colsum_partial of dout·x·rstd[row]
// (RMSNorm's weight gradient).
extern "C" __global__ void whale_rmsnorm_dw_partial(float* part, const float* dout, const float* x,
                                                    const float* rstd, i64 rows, i64 n) {
	i64 j = (i64)blockIdx.x * THREADS + threadIdx.x;
	if (j >= n) return;
	i64 c = blockIdx.y;
	i64 hi = min(rows, (c + 1) * COL_CHUNK);
	float s = 0;
	for (i64 r = c * COL_CHUNK; r < hi; r++) s += dout[r * n + j] * x[r * n + j] * rstd[r];
	part[c * n + j] = s;
}

// whale_colsum_add: dst (n) += the partials (chunks,n), added chunk by
// chunk in order. Grid ceil(n/THREADS).
extern "C" __global__ void whale_colsum_add(float* dst, const float* part, i64 chunks, i64 n) {
	i64 j = (i64)blockIdx.x * THREADS + threadIdx.x;
	if (j >= n) return;
	float d = dst[j];
	for (i64 c = 0; c < chunks; c++) d += part[c * n + j];
	dst[j] = d;
}

// whale_embedding: out (ntok,C) row i = table row tokens[i] (tokens checked
// on the host).
extern "C" __global__ void whale_embedding(float* out, const float* table, const int* tokens, i64 ntok, i64 C) {
	FOR_EACH(i, ntok * C) {
		i64 r = i / C, j = i - r * C;
		out[i] = table[(i64)tokens[r] * C + j];
	}
}

// whale_embedding_backward adds dout rows into dtable rows without atomics:
// plan lists the distinct tokens (nuniq), then nuniq+1 offsets into the
// row list, then the rows of dout grouped by token, each group in row
// order. Block (u, c) owns columns c·THREADS.. of token u's row and adds
// that token's rows in order: the CPU's order of additions.
extern "C" __global__ void whale_embedding_backward(float* dtable, const float* dout, const int* plan, i64 nuniq, i64 C) {
	i64 u = blockIdx.x;
	i64 j = (i64)blockIdx.y * THREADS + threadIdx.x;
	if (j >= C) return;
	const int* start = plan + nuniq;
	const int* rows = plan + 2 * nuniq + 1;
	float* dst = dtable + (i64)plan[u] * C + j;
	float d = *dst;
	for (int s = start[u]; s < start[u + 1]; s++) d += dout[(i64)rows[s] * C + j];
	*dst = d;
}

// whale_swiglu: out = g·sigmoid(g)·u.
extern "C" __global__ void whale_swiglu(float* out, const float* g, const float* u, i64 n) {
	FOR_EACH(i, n) {
		float x = g[i];
		float s = 1.0f / (1.0f + expf(-x));
		out[i] = x * s * u[i];
	}
}

// whale_swiglu_backward: with s = sigmoid(g), dg += ((d·u)·s)·(1 + g·(1−s))
// and du += d·(g·s), as the CPU's swigluBackGo.
extern "C" __global__ void whale_swiglu_backward(float* dg, float* du, const float* d, const float* g,
                                                 const float* u, i64 n) {
	FOR_EACH(i, n) {
		float x = g[i], dy = d[i];
		float s = 1.0f / (1.0f + expf(-x));
		float c = 1.0f + x * (1.0f - s);
		float p = (dy * u[i]) * s;
		dg[i] += p * c;
		du[i] += dy * (x * s);
	}
}

// whale_adamw applies one AdamW step with the CPU's float32 formula, every
// operation rounded on its own (no fused multiply-add) so the two backends
// agree bit for bit: c1, c2 are the bias corrections 1/(1-β^t), decay is
// 1-lr·wd, gsc the gradient scale.
extern "C" __global__ void whale_adamw(float* p, const float* g, float* m, float* v, i64 n, float b1, float b2,
                                       float c1, float c2, float lr, float eps, float decay, float gsc) {
	FOR_EACH(i, n) {
		float gi = __fmul_rn(g[i], gsc);
		float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(__fsub_rn(1.0f, b1), gi));
		float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, b2), gi), gi));
		m[i] = mi;
		v[i] = vi;
		float den = __fadd_rn(__fsqrt_rn(__fmul_rn(vi, c2)), eps);
		float step = __fdiv_rn(__fmul_rn(lr, __fmul_rn(mi, c1)), den);
		p[i] = __fsub_rn(__fmul_rn(p[i], decay), step);
	}
}

// whale_cache_write stores src (rows, KVH·hd) at positions pos0.. of a
// cache laid out [KVH][cap][hd] (one head's positions contiguous, each
// position's hd values contiguous).
extern "C" __global__ void whale_cache_write(float* cache, const float* src, i64 pos0, i64 rows, i64 KVH, i64 hd, i64 cap) {
	i64 w = KVH * hd;
	FOR_EACH(i, rows * w) {
		i64 r = i / w, e = i - r * w;
		i64 kh = e / hd, d = e - kh * hd;
		cache[(kh * cap + pos0 + r) * hd + d] = src[i];
	}
}
