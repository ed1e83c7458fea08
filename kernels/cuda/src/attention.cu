// Causal attention. Training (whale_attn_fwd_*, whale_attn_bwd_*): q (B·T,
// H·hd), k and v (B·T, KVH·hd), query head h reads KV head h/(H/KVH), lse
// (B·H·T) laid out [b][h][t]. Each kernel comes in four widths MAXHD = 32,
// 64, 128, 256 (the smallest ≥ hd is launched) so per-row vectors stay in
// registers; hd itself is a run-time size.
//
// The forward pass is flash-style: a block owns ATT_BR query rows of one
// (sequence, head), a thread one row; key/value tiles of BC rows go
// through shared memory and the softmax is online (running max and sum),
// so no T×T scores are stored. The backward pass recomputes the
// probabilities from lse and needs no atomics: whale_attn_bwd_dq gives each
// query row to one thread (looping over keys), whale_attn_bwd_dkdv each key
// row to one thread (looping over the query rows and heads that see it).
#include "common.cuh"

#define ATT_BR 64

// Keys per shared tile: BC·MAXHD floats per tile, 16 KB each for K and V.
template <int MAXHD>
struct att {
	static const int BC = 4096 / MAXHD;
};

// load_kv_tile copies keys and values j0..j0+nj-1 of sequence b, head kh
// (rows of kw = KVH·hd) into the block's shared tiles ks, vs (nj rows of
// hd), the block's ATT_BR threads striding over the elements.
__device__ __forceinline__ void load_kv_tile(float* ks, float* vs, const float* k, const float* v, i64 b, i64 T, i64 j0,
                                             i64 nj, i64 kw, i64 kh, i64 hd) {
	for (i64 e = threadIdx.x; e < nj * hd; e += ATT_BR) {
		i64 jj = e / hd, d = e - jj * hd;
		i64 src = (b * T + j0 + jj) * kw + kh * hd + d;
		ks[jj * hd + d] = k[src];
		vs[jj * hd + d] = v[src];
	}
}

template <int MAXHD>
__device__ __forceinline__ void attn_fwd(float* out, float* lse, const float* q, const float* k, const float* v, i64 B,
                                         i64 T, i64 H, i64 KVH, i64 hd, float scale) {
	const int BC = att<MAXHD>::BC;
	__shared__ float ks[BC * MAXHD];
	__shared__ float vs[BC * MAXHD];
	i64 tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	i64 kh = h / (H / KVH);
	i64 qw = H * hd, kw = KVH * hd;
	i64 i = tile * ATT_BR + threadIdx.x;
	bool live = i < T;
	float qr[MAXHD], o[MAXHD];
	const float* qrow = q + (b * T + i) * qw + h * hd;
#pragma unroll
	for (int d = 0; d < MAXHD; d++) {
		qr[d] = (live && d < hd) ? qrow[d] : 0.0f;
		o[d] = 0;
	}
	float m = -INFINITY, l = 0;
	i64 last = min(T, (tile + 1) * ATT_BR); // keys the block's rows can see
	for (i64 j0 = 0; j0 < last; j0 += BC) {
		i64 nj = min((i64)BC, last - j0);
		__syncthreads();
		load_kv_tile(ks, vs, k, v, b, T, j0, nj, kw, kh, hd);
		__syncthreads();
		if (!live) continue;
		i64 nk = min(nj, i - j0 + 1); // causal: keys j0..i
		for (i64 jj = 0; jj < nk; jj++) {
			const float* kr = ks + jj * hd;
			float s = 0;
#pragma unroll
			for (int d = 0; d < MAXHD; d++)
				if (d < hd) s += qr[d] * kr[d];
			s *= scale;
			if (s > m) {
				float c = expf(m - s);
				l *= c;
#pragma unroll
				for (int d = 0; d < MAXHD; d++) o[d] *= c;
				m = s;
			}
			float p = expf(s - m);
			l += p;
			const float* vr = vs + jj * hd;
#pragma unroll
			for (int d = 0; d < MAXHD; d++)
				if (d < hd) o[d] += p * vr[d];
		}
	}
	if (!live) return;
	float inv = 1.0f / l;
	float* orow = out + (b * T + i) * qw + h * hd;
#pragma unroll
	for (int d = 0; d < MAXHD; d++)
		if (d < hd) orow[d] = o[d] * inv;
	lse[(b * H + h) * T + i] = m + logf(l);
}

// attn_bwd_dq: dq (B·T, H·hd) += Σ_j dS_ij·k_j for each query row i, with
// P = exp(q·k·scale − lse), dS = P·(dout·v − D)·scale, D = rowsum(dout·out)
// precomputed by whale_attn_bwd_d.
template <int MAXHD>
__device__ __forceinline__ void attn_bwd_dq(float* dq, const float* dout, const float* D, const float* lse, const float* q,
                                            const float* k, const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd,
                                            float scale) {
	const int BC = att<MAXHD>::BC;
	__shared__ float ks[BC * MAXHD];
	__shared__ float vs[BC * MAXHD];
	i64 tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	i64 kh = h / (H / KVH);
	i64 qw = H * hd, kw = KVH * hd;
	i64 i = tile * ATT_BR + threadIdx.x;
	bool live = i < T;
	float qr[MAXHD], dor[MAXHD], g[MAXHD];
	i64 qo = (b * T + i) * qw + h * hd;
#pragma unroll
	for (int d = 0; d < MAXHD; d++) {
		qr[d] = (live && d < hd) ? q[qo + d] : 0.0f;
		dor[d] = (live && d < hd) ? dout[qo + d] : 0.0f;
		g[d] = 0;
	}
	float L = live ? lse[(b * H + h) * T + i] : 0.0f;
	float Dd = live ? D[(b * H + h) * T + i] : 0.0f;
	i64 last = min(T, (tile + 1) * ATT_BR);
	for (i64 j0 = 0; j0 < last; j0 += BC) {
		i64 nj = min((i64)BC, last - j0);
		__syncthreads();
		load_kv_tile(ks, vs, k, v, b, T, j0, nj, kw, kh, hd);
		__syncthreads();
		if (!live) continue;
		i64 nk = min(nj, i - j0 + 1);
		for (i64 jj = 0; jj < nk; jj++) {
			const float* kr = ks + jj * hd;
			const float* vr = vs + jj * hd;
			float s = 0, dp = 0;
#pragma unroll
			for (int d = 0; d < MAXHD; d++)
				if (d < hd) {
					s += qr[d] * kr[d];
					dp += dor[d] * vr[d];
				}
			float p = expf(s * scale - L);
			float ds = p * (dp - Dd) * scale;
#pragma unroll
			for (int d = 0; d < MAXHD; d++)
				if (d < hd) g[d] += ds * kr[d];
		}
	}
	if (!live) return;
#pragma unroll
	for (int d = 0; d < MAXHD; d++)
		if (d < hd) dq[qo + d] += g[d];
}

// attn_bwd_dkdv: one thread per key row j of one (sequence, KV head):
// dv_j += Σ P_ij·dout_i and dk_j += Σ dS_ij·q_i over the query rows i ≥ j
// of every query head reading this KV head, heads in order, rows in order.
// Query rows, dout rows, lse and D go through shared tiles of BC rows.
template <int MAXHD>
__device__ __forceinline__ void attn_bwd_dkdv(float* dk, float* dv, const float* dout, const float* D, const float* lse,
                                              const float* q, const float* k, const float* v, i64 B, i64 T, i64 H,
                                              i64 KVH, i64 hd, float scale) {
	const int BC = att<MAXHD>::BC;
	__shared__ float qs[BC * MAXHD];
	__shared__ float dos[BC * MAXHD];
	__shared__ float Ls[BC], Ds[BC];
	i64 tile = blockIdx.x, kh = blockIdx.y, b = blockIdx.z;
	i64 grp = H / KVH;
	i64 qw = H * hd, kw = KVH * hd;
	i64 j = tile * ATT_BR + threadIdx.x;
	bool live = j < T;
	float kr[MAXHD], vr[MAXHD], gk[MAXHD], gv[MAXHD];
	i64 ko = (b * T + j) * kw + kh * hd;
#pragma unroll
	for (int d = 0; d < MAXHD; d++) {
		kr[d] = (live && d < hd) ? k[ko + d] : 0.0f;
		vr[d] = (live && d < hd) ? v[ko + d] : 0.0f;
		gk[d] = 0;
		gv[d] = 0;
	}
	i64 first = tile * ATT_BR; // the block's smallest key: no earlier query sees it
	for (i64 h = kh * grp; h < kh * grp + grp; h++) {
		for (i64 i0 = first; i0 < T; i0 += BC) {
			i64 ni = min((i64)BC, T - i0);
			__syncthreads();
			for (i64 e = threadIdx.x; e < ni * hd; e += ATT_BR) {
				i64 ii = e / hd, d = e - ii * hd;
				i64 src = (b * T + i0 + ii) * qw + h * hd + d;
				qs[ii * hd + d] = q[src];
				dos[ii * hd + d] = dout[src];
			}
			for (i64 ii = threadIdx.x; ii < ni; ii += ATT_BR) {
				Ls[ii] = lse[(b * H + h) * T + i0 + ii];
				Ds[ii] = D[(b * H + h) * T + i0 + ii];
			}
			__syncthreads();
			if (!live) continue;
			for (i64 ii = max((i64)0, j - i0); ii < ni; ii++) { // causal: rows i ≥ j
				const float* qi = qs + ii * hd;
				const float* di = dos + ii * hd;
				float s = 0, dp = 0;
#pragma unroll
				for (int d = 0; d < MAXHD; d++)
					if (d < hd) {
						s += qi[d] * kr[d];
						dp += di[d] * vr[d];
					}
				float p = expf(s * scale - Ls[ii]);
				float ds = p * (dp - Ds[ii]) * scale;
#pragma unroll
				for (int d = 0; d < MAXHD; d++)
					if (d < hd) {
						gv[d] += p * di[d];
						gk[d] += ds * qi[d];
					}
			}
		}
	}
	if (!live) return;
#pragma unroll
	for (int d = 0; d < MAXHD; d++)
		if (d < hd) {
			dk[ko + d] += gk[d];
			dv[ko + d] += gv[d];
		}
}

// whale_attn_bwd_d: D (B·H·T, [b][h][t]) = rowsum(dout·out) per query row
// and head, one thread each.
extern "C" __global__ void whale_attn_bwd_d(float* D, const float* dout, const float* out, i64 B, i64 T, i64 H, i64 hd) {
	FOR_EACH(x, B * H * T) {
		i64 t = x % T, bh = x / T;
		i64 h = bh % H, b = bh / H;
		i64 o = (b * T + t) * H * hd + h * hd;
		float s = 0;
		for (i64 d = 0; d < hd; d++) s += dout[o + d] * out[o + d];
		D[x] = s;
	}
}

// Entry points: grid (ceil(T/ATT_BR), H, B) for fwd and dq, (ceil(T/ATT_BR),
// KVH, B) for dkdv; blocks of ATT_BR threads.
#define ATT_ENTRY(W)                                                                                                    \
	extern "C" __global__ void __launch_bounds__(ATT_BR) whale_attn_fwd_##W(                                          \
	    float* out, float* lse, const float* q, const float* k, const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd, \
	    float scale) {                                                                                                 \
		attn_fwd<W>(out, lse, q, k, v, B, T, H, KVH, hd, scale);                                                       \
	}                                                                                                                  \
	extern "C" __global__ void __launch_bounds__(ATT_BR) whale_attn_bwd_dq_##W(                                       \
	    float* dq, const float* dout, const float* D, const float* lse, const float* q, const float* k, const float* v, \
	    i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale) {                                                           \
		attn_bwd_dq<W>(dq, dout, D, lse, q, k, v, B, T, H, KVH, hd, scale);                                            \
	}                                                                                                                  \
	extern "C" __global__ void __launch_bounds__(ATT_BR) whale_attn_bwd_dkdv_##W(                                     \
	    float* dk, float* dv, const float* dout, const float* D, const float* lse, const float* q, const float* k,      \
	    const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale) {                                           \
		attn_bwd_dkdv<W>(dk, dv, dout, D, lse, q, k, v, B, T, H, KVH, hd, scale);                                      \
	}

ATT_ENTRY(32)
ATT_ENTRY(64)
ATT_ENTRY(128)
ATT_ENTRY(256)

// KV_THREADS is the block size of whale_attn_kv, equal to kernels.KVBlock:
// one thread per position of a value block.
#define KV_THREADS 128
// KV_ROW is the number of i64 fields of one row descriptor of whale_attn_kv
// (kvRow on the Go side).
#define KV_ROW 9

// kv_key returns key (or value) position p of KV head kh of a row's caches
// ([KVH][cap][hd]): positions below pn come from the prefix cache.
__device__ __forceinline__ const float* kv_at(const i64* row, int which, i64 p, i64 kh, i64 hd) {
	i64 pn = row[8];
	if (p < pn) return (const float*)row[5 + which] + (kh * row[7] + p) * hd;
	return (const float*)row[2 + which] + (kh * row[4] + p - pn) * hd;
}

__device__ __forceinline__ float kv_score(const float* qs, const i64* row, i64 p, i64 kh, i64 hd, float scale) {
	const float* kp = kv_at(row, 0, p, kh, hd);
	float s = 0;
	for (i64 d = 0; d < hd; d++) s += qs[d] * kp[d];
	return s * scale;
}

// whale_attn_kv: attention of query rows against caches, one block of
// KV_THREADS per (row, query head), grid (rows, H). rows holds KV_ROW i64
// per row: q row, n (positions seen), K, V, cap, PK, PV, pcap, pn. Pass one
// finds the softmax's max and sum (a running pair per thread, merged in a
// fixed tree); pass two recomputes each block of KVBlock scores,
// normalises them and sums that block's values alone, adding block sums
// in order. Nothing depends on the other rows, and a block reads the same
// numbers whichever cache holds it. hd ≤ 256.
extern "C" __global__ void __launch_bounds__(KV_THREADS) whale_attn_kv(float* out, const float* q, const i64* rows, i64 H,
                                                                      i64 KVH, i64 hd, float scale) {
	__shared__ float qs[256], os[256], ps[KV_THREADS];
	__shared__ float shm[KV_THREADS];
	__shared__ double shl[KV_THREADS];
	const i64* row = rows + (i64)blockIdx.x * KV_ROW;
	i64 h = blockIdx.y, kh = h / (H / KVH), n = row[1];
	i64 qo = row[0] * H * hd + h * hd;
	unsigned t = threadIdx.x;
	for (i64 d = t; d < hd; d += KV_THREADS) qs[d] = q[qo + d];
	__syncthreads();
	float m = -INFINITY;
	double l = 0;
	for (i64 p = t; p < n; p += KV_THREADS) {
		float s = kv_score(qs, row, p, kh, hd, scale);
		if (s > m) {
			l *= exp((double)(m - s));
			m = s;
		}
		l += (double)expf(s - m);
	}
	shm[t] = m;
	shl[t] = l;
	__syncthreads();
	for (unsigned w = KV_THREADS / 2; w > 0; w >>= 1) {
		if (t < w) {
			float m1 = shm[t], m2 = shm[t + w];
			float mm = fmaxf(m1, m2);
			double l1 = m1 == -INFINITY ? 0.0 : shl[t] * exp((double)(m1 - mm));
			double l2 = m2 == -INFINITY ? 0.0 : shl[t + w] * exp((double)(m2 - mm));
			shm[t] = mm;
			shl[t] = l1 + l2;
		}
		__syncthreads();
	}
	float mx = shm[0];
	float inv = (float)(1.0 / shl[0]);
	for (i64 b0 = 0; b0 < n; b0 += KV_THREADS) {
		i64 p = b0 + t;
		ps[t] = p < n ? expf(kv_score(qs, row, p, kh, hd, scale) - mx) * inv : 0.0f;
		__syncthreads();
		i64 nb = min((i64)KV_THREADS, n - b0);
		for (i64 d = t; d < hd; d += KV_THREADS) {
			float acc = 0;
			for (i64 e = 0; e < nb; e++) acc += ps[e] * kv_at(row, 1, b0 + e, kh, hd)[d];
			os[d] = b0 == 0 ? acc : os[d] + acc;
		}
		__syncthreads();
	}
	for (i64 d = t; d < hd; d += KV_THREADS) out[qo + d] = os[d];
}
