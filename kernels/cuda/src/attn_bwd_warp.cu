// Causal attention, forward and backward, a warp per row (the default
// since the second device check; the kernels of attention.cu, a thread per
// row, stay behind WHALE_CUDA_ATTN_FWD=thread and WHALE_CUDA_ATTN_BWD=thread).
// Shapes as in attention.cu: q, dout, dq (B·T, H·hd), k, v, dk, dv
// (B·T, KVH·hd), lse and D (B·H·T) laid out [b][h][t].
//
// A thread per row held MAXHD floats of each vector in registers (spilling
// at head dim 128) and put 64 threads on a block. Here a block of
// AW_WARPS warps owns AW_ROWS rows, each warp AW_ROWS/AW_WARPS of them
// (rows w, w+AW_WARPS, ...), and a row's hd values are spread over the 32
// lanes: lane l holds elements l, l+32, l+64, ... (MAXHD/32 of them), so
// shared-memory reads are free of bank conflicts and global loads are
// coalesced. Each dot product is a lane-local partial sum followed by a
// fixed xor-shuffle tree: the same inputs give the same bits on every run.
// Every output element has one writer (no atomics), and each row's terms
// are added in key (or head, then query) order.
#include "common.cuh"

#define AW_WARPS 8
#define AW_ROWS 32
#define AW_RPW (AW_ROWS / AW_WARPS) // rows per warp

// warp_sum adds v over the warp in a fixed butterfly; every lane gets the
// sum.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

// aw_load_tile copies rows r0..r0+n-1 (row stride w, column offset c0, hd
// columns) of a and b into the shared tiles as and bs (rows of MAXHD,
// zero beyond hd, so padded lanes add nothing).
template <int MAXHD>
__device__ __forceinline__ void aw_load_tile(float* as, float* bs, const float* a, const float* b, i64 r0, i64 n, i64 w,
                                             i64 c0, i64 hd) {
	for (i64 e = threadIdx.x; e < n * MAXHD; e += AW_WARPS * 32) {
		i64 r = e / MAXHD, d = e - r * MAXHD;
		float x = 0, y = 0;
		if (d < hd) {
			i64 src = (r0 + r) * w + c0 + d;
			x = a[src];
			y = b[src];
		}
		as[e] = x;
		bs[e] = y;
	}
}

// attn_bwd_dq_warp: dq_i += Σ_{j ≤ i} dS_ij·k_j with P = exp(q·k·scale −
// lse), dS = P·(dout·v − D)·scale. Grid (ceil(T/AW_ROWS), H, B).
template <int MAXHD>
__device__ __forceinline__ void attn_bwd_dq_warp(float* dq, const float* dout, const float* D, const float* lse,
                                                 const float* q, const float* k, const float* v, i64 B, i64 T, i64 H,
                                                 i64 KVH, i64 hd, float scale) {
	const int E = MAXHD / 32;
	const int BC = 4096 / MAXHD;
	__shared__ float ks[BC * MAXHD];
	__shared__ float vs[BC * MAXHD];
	i64 tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	i64 kh = h / (H / KVH);
	i64 qw = H * hd, kw = KVH * hd;
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float qr[AW_RPW][E], dr[AW_RPW][E], g[AW_RPW][E], L[AW_RPW], Dd[AW_RPW];
	i64 row[AW_RPW];
#pragma unroll
	for (int t = 0; t < AW_RPW; t++) {
		i64 i = tile * AW_ROWS + warp + t * AW_WARPS;
		row[t] = i;
		bool live = i < T;
		i64 o = (b * T + i) * qw + h * hd;
#pragma unroll
		for (int e = 0; e < E; e++) {
			int d = e * 32 + lane;
			qr[t][e] = (live && d < hd) ? q[o + d] : 0.0f;
			dr[t][e] = (live && d < hd) ? dout[o + d] : 0.0f;
			g[t][e] = 0;
		}
		L[t] = live ? lse[(b * H + h) * T + i] : 0.0f;
		Dd[t] = live ? D[(b * H + h) * T + i] : 0.0f;
	}
	i64 last = min(T, (tile + 1) * AW_ROWS); // keys the block's rows can see
	for (i64 j0 = 0; j0 < last; j0 += BC) {
		i64 nj = min((i64)BC, last - j0);
		__syncthreads();
		aw_load_tile<MAXHD>(ks, vs, k, v, b * T + j0, nj, kw, kh * hd, hd);
		__syncthreads();
		for (i64 jj = 0; jj < nj; jj++) {
			i64 j = j0 + jj;
			if (j > row[AW_RPW - 1]) break; // the warp's last row is its largest
			float kr[E], vr[E];
#pragma unroll
			for (int e = 0; e < E; e++) {
				kr[e] = ks[jj * MAXHD + e * 32 + lane];
				vr[e] = vs[jj * MAXHD + e * 32 + lane];
			}
			float s[AW_RPW], dp[AW_RPW];
#pragma unroll
			for (int t = 0; t < AW_RPW; t++) {
				float a = 0, c = 0;
#pragma unroll
				for (int e = 0; e < E; e++) {
					a += qr[t][e] * kr[e];
					c += dr[t][e] * vr[e];
				}
				s[t] = warp_sum(a);
				dp[t] = warp_sum(c);
			}
#pragma unroll
			for (int t = 0; t < AW_RPW; t++) {
				if (j > row[t] || row[t] >= T) continue; // causal, and rows past T
				float p = expf(s[t] * scale - L[t]);
				float ds = p * (dp[t] - Dd[t]) * scale;
#pragma unroll
				for (int e = 0; e < E; e++) g[t][e] += ds * kr[e];
			}
		}
	}
#pragma unroll
	for (int t = 0; t < AW_RPW; t++) {
		if (row[t] >= T) continue;
		i64 o = (b * T + row[t]) * qw + h * hd;
#pragma unroll
		for (int e = 0; e < E; e++) {
			int d = e * 32 + lane;
			if (d < hd) dq[o + d] += g[t][e];
		}
	}
}

// attn_bwd_dkdv_warp: for key row j of KV head kh, dv_j += Σ P_ij·dout_i
// and dk_j += Σ dS_ij·q_i over the query rows i ≥ j of every query head
// reading kh, heads in order, rows in order. Grid (ceil(T/AW_ROWS), KVH, B).
template <int MAXHD>
__device__ __forceinline__ void attn_bwd_dkdv_warp(float* dk, float* dv, const float* dout, const float* D,
                                                   const float* lse, const float* q, const float* k, const float* v,
                                                   i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale) {
	const int E = MAXHD / 32;
	const int BC = 4096 / MAXHD;
	__shared__ float qs[BC * MAXHD];
	__shared__ float dos[BC * MAXHD];
	__shared__ float Ls[BC], Ds[BC];
	i64 tile = blockIdx.x, kh = blockIdx.y, b = blockIdx.z;
	i64 grp = H / KVH;
	i64 qw = H * hd, kw = KVH * hd;
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float kr[AW_RPW][E], vr[AW_RPW][E], gk[AW_RPW][E], gv[AW_RPW][E];
	i64 row[AW_RPW];
#pragma unroll
	for (int t = 0; t < AW_RPW; t++) {
		i64 j = tile * AW_ROWS + warp + t * AW_WARPS;
		row[t] = j;
		bool live = j < T;
		i64 o = (b * T + j) * kw + kh * hd;
#pragma unroll
		for (int e = 0; e < E; e++) {
			int d = e * 32 + lane;
			kr[t][e] = (live && d < hd) ? k[o + d] : 0.0f;
			vr[t][e] = (live && d < hd) ? v[o + d] : 0.0f;
			gk[t][e] = 0;
			gv[t][e] = 0;
		}
	}
	i64 first = tile * AW_ROWS; // the block's smallest key: no earlier query sees it
	for (i64 h = kh * grp; h < kh * grp + grp; h++) {
		for (i64 i0 = first; i0 < T; i0 += BC) {
			i64 ni = min((i64)BC, T - i0);
			__syncthreads();
			aw_load_tile<MAXHD>(qs, dos, q, dout, b * T + i0, ni, qw, h * hd, hd);
			for (i64 ii = threadIdx.x; ii < ni; ii += AW_WARPS * 32) {
				Ls[ii] = lse[(b * H + h) * T + i0 + ii];
				Ds[ii] = D[(b * H + h) * T + i0 + ii];
			}
			__syncthreads();
			// Query rows below the warp's first key see none of its keys.
			for (i64 ii = max((i64)0, row[0] - i0); ii < ni; ii++) {
				i64 i = i0 + ii;
				float qi[E], di[E];
#pragma unroll
				for (int e = 0; e < E; e++) {
					qi[e] = qs[ii * MAXHD + e * 32 + lane];
					di[e] = dos[ii * MAXHD + e * 32 + lane];
				}
				float s[AW_RPW], dp[AW_RPW];
#pragma unroll
				for (int t = 0; t < AW_RPW; t++) {
					float a = 0, c = 0;
#pragma unroll
					for (int e = 0; e < E; e++) {
						a += qi[e] * kr[t][e];
						c += di[e] * vr[t][e];
					}
					s[t] = warp_sum(a);
					dp[t] = warp_sum(c);
				}
				float Li = Ls[ii], Di = Ds[ii];
#pragma unroll
				for (int t = 0; t < AW_RPW; t++) {
					if (row[t] > i || row[t] >= T) continue; // causal: rows i ≥ j
					float p = expf(s[t] * scale - Li);
					float ds = p * (dp[t] - Di) * scale;
#pragma unroll
					for (int e = 0; e < E; e++) {
						gv[t][e] += p * di[e];
						gk[t][e] += ds * qi[e];
					}
				}
			}
		}
	}
#pragma unroll
	for (int t = 0; t < AW_RPW; t++) {
		if (row[t] >= T) continue;
		i64 o = (b * T + row[t]) * kw + kh * hd;
#pragma unroll
		for (int e = 0; e < E; e++) {
			int d = e * 32 + lane;
			if (d < hd) {
				dk[o + d] += gk[t][e];
				dv[o + d] += gv[t][e];
			}
		}
	}
}

// attn_fwd_warp: whale_attn_fwd_W's arithmetic (scores scaled, an online
// softmax over the keys in order, out = o/l, lse = m + log l) with a
// warp per row, lanes over the head dimension: only the dot products'
// order of addition differs. Grid (ceil(T/AW_ROWS), H, B).
template <int MAXHD>
__device__ __forceinline__ void attn_fwd_warp(float* out, float* lse, const float* q, const float* k, const float* v,
                                              i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale) {
	const int E = MAXHD / 32;
	const int BC = 4096 / MAXHD;
	__shared__ float ks[BC * MAXHD];
	__shared__ float vs[BC * MAXHD];
	i64 tile = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
	i64 kh = h / (H / KVH);
	i64 qw = H * hd, kw = KVH * hd;
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	float qr[AW_RPW][E], o[AW_RPW][E], m[AW_RPW], l[AW_RPW];
	i64 row[AW_RPW];
#pragma unroll
	for (int t = 0; t < AW_RPW; t++) {
		i64 i = tile * AW_ROWS + warp + t * AW_WARPS;
		row[t] = i;
		i64 off = (b * T + i) * qw + h * hd;
#pragma unroll
		for (int e = 0; e < E; e++) {
			int d = e * 32 + lane;
			qr[t][e] = (i < T && d < hd) ? q[off + d] : 0.0f;
			o[t][e] = 0;
		}
		m[t] = -INFINITY;
		l[t] = 0;
	}
	i64 last = min(T, (tile + 1) * AW_ROWS);
	for (i64 j0 = 0; j0 < last; j0 += BC) {
		i64 nj = min((i64)BC, last - j0);
		__syncthreads();
		aw_load_tile<MAXHD>(ks, vs, k, v, b * T + j0, nj, kw, kh * hd, hd);
		__syncthreads();
		for (i64 jj = 0; jj < nj; jj++) {
			i64 j = j0 + jj;
			if (j > row[AW_RPW - 1]) break;
			float kr[E], vr[E];
#pragma unroll
			for (int e = 0; e < E; e++) {
				kr[e] = ks[jj * MAXHD + e * 32 + lane];
				vr[e] = vs[jj * MAXHD + e * 32 + lane];
			}
			float sc[AW_RPW];
#pragma unroll
			for (int t = 0; t < AW_RPW; t++) {
				float a = 0;
#pragma unroll
				for (int e = 0; e < E; e++) a += qr[t][e] * kr[e];
				sc[t] = warp_sum(a);
			}
#pragma unroll
			for (int t = 0; t < AW_RPW; t++) {
				if (j > row[t] || row[t] >= T) continue;
				float s = sc[t] * scale;
				if (s > m[t]) {
					float c = expf(m[t] - s);
					l[t] *= c;
#pragma unroll
					for (int e = 0; e < E; e++) o[t][e] *= c;
					m[t] = s;
				}
				float p = expf(s - m[t]);
				l[t] += p;
#pragma unroll
				for (int e = 0; e < E; e++) o[t][e] += p * vr[e];
			}
		}
	}
#pragma unroll
	for (int t = 0; t < AW_RPW; t++) {
		if (row[t] >= T) continue;
		float inv = 1.0f / l[t];
		i64 off = (b * T + row[t]) * qw + h * hd;
#pragma unroll
		for (int e = 0; e < E; e++) {
			int d = e * 32 + lane;
			if (d < hd) out[off + d] = o[t][e] * inv;
		}
		if (lane == 0) lse[(b * H + h) * T + row[t]] = m[t] + logf(l[t]);
	}
}

// whale_attn_bwd_d_warp: D (B·H·T, [b][h][t]) = rowsum(dout·out), a warp
// per query row and head, AW_WARPS rows per block of AW_WARPS·32 threads.
extern "C" __global__ void __launch_bounds__(AW_WARPS * 32)
    whale_attn_bwd_d_warp(float* D, const float* dout, const float* out, i64 B, i64 T, i64 H, i64 hd) {
	i64 x = (i64)blockIdx.x * AW_WARPS + (threadIdx.x >> 5);
	if (x >= B * H * T) return;
	int lane = threadIdx.x & 31;
	i64 t = x % T, bh = x / T;
	i64 h = bh % H, b = bh / H;
	i64 o = (b * T + t) * H * hd + h * hd;
	float s = 0;
	for (i64 d = lane; d < hd; d += 32) s += dout[o + d] * out[o + d];
	s = warp_sum(s);
	if (lane == 0) D[x] = s;
}

// Entry points: grid (ceil(T/AW_ROWS), H, B) for fwd and dq, (ceil(T/AW_ROWS),
// KVH, B) for dkdv; blocks of AW_WARPS·32 threads.
#define AW_ENTRY(W)                                                                                                     \
	extern "C" __global__ void __launch_bounds__(AW_WARPS * 32) whale_attn_fwd_warp_##W(                              \
	    float* out, float* lse, const float* q, const float* k, const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd, \
	    float scale) {                                                                                                 \
		attn_fwd_warp<W>(out, lse, q, k, v, B, T, H, KVH, hd, scale);                                                  \
	}                                                                                                                  \
	extern "C" __global__ void __launch_bounds__(AW_WARPS * 32) whale_attn_bwd_dq_warp_##W(                           \
	    float* dq, const float* dout, const float* D, const float* lse, const float* q, const float* k, const float* v, \
	    i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale) {                                                           \
		attn_bwd_dq_warp<W>(dq, dout, D, lse, q, k, v, B, T, H, KVH, hd, scale);                                       \
	}                                                                                                                  \
	extern "C" __global__ void __launch_bounds__(AW_WARPS * 32) whale_attn_bwd_dkdv_warp_##W(                         \
	    float* dk, float* dv, const float* dout, const float* D, const float* lse, const float* q, const float* k,      \
	    const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale) {                                           \
		attn_bwd_dkdv_warp<W>(dk, dv, dout, D, lse, q, k, v, B, T, H, KVH, hd, scale);                                 \
	}

AW_ENTRY(32)
AW_ENTRY(64)
AW_ENTRY(128)
AW_ENTRY(256)
