// Row-wise ops: RMSNorm, RoPE and the cross-entropy loss.
#include "common.cuh"

// whale_rmsnorm: one block of THREADS per row. out (rows,C) = x·rstd·w with
// rstd = 1/sqrt(mean(x²)+eps), the sum of squares in double; rstd (rows)
// is saved unless it is null.
extern "C" __global__ void __launch_bounds__(THREADS) whale_rmsnorm(float* out, float* rstd, const float* x, const float* w,
                                                                   i64 rows, i64 C, double eps) {
	__shared__ double sh[THREADS];
	i64 r = blockIdx.x;
	const float* xr = x + r * C;
	double ss = 0;
	for (i64 j = threadIdx.x; j < C; j += THREADS) {
		double v = xr[j];
		ss += v * v;
	}
	ss = block_sum_double(ss, sh);
	float s = (float)(1.0 / sqrt(ss / (double)C + eps));
	if (rstd != 0 && threadIdx.x == 0) rstd[r] = s;
	float* orow = out + r * C;
	for (i64 j = threadIdx.x; j < C; j += THREADS) orow[j] = xr[j] * s * w[j];
}

// whale_rmsnorm_backward: one block per row. dx += s·(dy·w − x·s·m) with m
// = mean(dy·w·x·s) summed in double. The weight gradient is a separate
// column sum (whale_rmsnorm_dw_partial).
extern "C" __global__ void __launch_bounds__(THREADS) whale_rmsnorm_backward(float* dx, const float* dout, const float* x,
                                                                            const float* w, const float* rstd, i64 rows, i64 C) {
	__shared__ double sh[THREADS];
	i64 r = blockIdx.x;
	const float* xr = x + r * C;
	const float* dy = dout + r * C;
	float s = rstd[r];
	double acc = 0;
	for (i64 j = threadIdx.x; j < C; j += THREADS) acc += (double)(dy[j] * w[j] * xr[j] * s);
	acc = block_sum_double(acc, sh);
	float mt = (float)(acc / (double)C);
	float* d = dx + r * C;
	for (i64 j = threadIdx.x; j < C; j += THREADS) d[j] += s * (dy[j] * w[j] - xr[j] * s * mt);
}

// whale_rope rotates pairs (i, i+hd/2) of every head of x (rows, heads·hd)
// by pos[row]·inv[i] (inv = theta^(-2i/hd) computed on the host in double,
// as the CPU does), sign -1 for the inverse rotation; with add set the
// result is added to out. One thread per pair: out may alias x. Each
// product is rounded on its own as in the CPU's ropeRowGo.
extern "C" __global__ void whale_rope(float* out, const float* x, const int* pos, const double* inv, i64 rows, i64 heads,
                                      i64 hd, double sign, i64 add) {
	i64 half = hd / 2;
	i64 per = heads * half;
	FOR_EACH(i, rows * per) {
		i64 r = i / per, rem = i - r * per;
		i64 h = rem / half, k = rem - h * half;
		double sn, cs;
		sincos((double)pos[r] * inv[k], &sn, &cs);
		float c = (float)cs, s = (float)(sign * sn);
		i64 base = r * heads * hd + h * hd + k;
		float a = x[base], b = x[base + half];
		float ra = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
		float rb = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
		if (add) {
			ra = __fadd_rn(out[base], ra);
			rb = __fadd_rn(out[base + half], rb);
		}
		out[base] = ra;
		out[base + half] = rb;
	}
}

// CE_THREADS is the block size of whale_cross_entropy (one block per row).
#define CE_THREADS 512

// whale_cross_entropy: one block per row of logits (rows,V). loss[r] =
// w·(lse − z[t]) and, unless dlogits is null, dlogits row = w·(softmax −
// onehot(t)), overwritten; dlogits may alias logits (every element is read
// by the thread that writes it, and z[t] is read before any write). A row
// of weight 0 gets loss 0 and a zero gradient, and its target is not read.
extern "C" __global__ void __launch_bounds__(CE_THREADS) whale_cross_entropy(float* loss, float* dlogits, const float* logits,
                                                                            const int* targets, const float* weight, i64 rows, i64 V) {
	__shared__ double shd[CE_THREADS];
	__shared__ float shf[CE_THREADS];
	i64 r = blockIdx.x;
	float w = weight[r];
	float* d = dlogits != 0 ? dlogits + r * V : 0;
	if (w == 0.0f) {
		if (threadIdx.x == 0) loss[r] = 0;
		if (d != 0)
			for (i64 j = threadIdx.x; j < V; j += CE_THREADS) d[j] = 0;
		return;
	}
	const float* z = logits + r * V;
	float mx = -INFINITY;
	for (i64 j = threadIdx.x; j < V; j += CE_THREADS) mx = fmaxf(mx, z[j]);
	mx = block_max_float(mx, shf);
	double sum = 0;
	for (i64 j = threadIdx.x; j < V; j += CE_THREADS) sum += exp((double)(z[j] - mx));
	sum = block_sum_double(sum, shd);
	double lse = (double)mx + log(sum);
	int t = targets[r];
	float zt = z[t];
	if (threadIdx.x == 0) loss[r] = (float)((double)w * (lse - (double)zt));
	if (d == 0) return;
	// Every thread has read z[t] before anyone overwrites it.
	__syncthreads();
	for (i64 j = threadIdx.x; j < V; j += CE_THREADS) {
		float g = w * (float)exp((double)z[j] - lse);
		if (j == t) g -= w;
		d[j] = g;
	}
}
