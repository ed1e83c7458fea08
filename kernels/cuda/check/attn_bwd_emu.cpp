// attn_bwd_emu.cpp runs the kernels of src/attn_bwd_warp.cu (attention
// forward and backward, a warp per row) on the CPU: every CUDA thread a
// coroutine (ucontext) on one OS thread, __syncthreads a block barrier,
// __shfl_xor_sync a slot array between two warp barriers, blocks one after
// another (so __shared__ is static). It compares out, lse, dq, dk, dv with
// a float64 reference of causal attention over odd shapes (several tiles,
// GQA, head dims 6 to 200) and exits 1 past a normalised error of 1e-5.
// For checking the kernels on a machine without a GPU (minutes):
//   cd kernels/cuda/src && g++ -std=c++20 -O1 -I. -o /tmp/emu ../check/attn_bwd_emu.cpp && /tmp/emu
#include <ucontext.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <random>
#include <algorithm>
#include <cstring>
#include <functional>
using std::min; using std::max;
struct d3 { unsigned x, y, z; };
// Emulated threads are coroutines on one OS thread: cur says which runs.
static int cur;
struct Emu { ucontext_t ctx; std::vector<char> stack; bool done; d3 tid; };
static std::vector<Emu> emus;
static ucontext_t sched;
#define threadIdx (emus[cur].tid)
static d3 blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
struct Bar { int n, count = 0, gen = 0; };
static Bar blockBar{0};
static std::vector<Bar> warpBar;
inline void yield() { swapcontext(&emus[cur].ctx, &sched); }
inline void arrive(Bar& b) {
	int g = b.gen;
	if (++b.count == b.n) { b.count = 0; b.gen++; return; }
	while (b.gen == g) yield();
}
static float slots[1024];
inline void __syncthreads() { arrive(blockBar); }
inline float __shfl_xor_sync(unsigned, float v, int o) {
	unsigned t = threadIdx.x, w = t >> 5;
	slots[t] = v;
	arrive(warpBar[w]);
	float r = slots[(w << 5) | ((t & 31) ^ o)];
	arrive(warpBar[w]);
	return r;
}
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
#include <cstring>
#include "common.cuh"
#include "attn_bwd_warp.cu"

static std::function<void()> body;
static void trampoline() { body(); emus[cur].done = true; swapcontext(&emus[cur].ctx, &sched); }
template <class F> void launch(d3 grid, unsigned threads, F f) {
	gridDim = grid; blockDim = {threads, 1, 1};
	body = f;
	for (unsigned z = 0; z < grid.z; z++) for (unsigned y = 0; y < grid.y; y++) for (unsigned x = 0; x < grid.x; x++) {
		blockIdx = {x, y, z};
		blockBar = Bar{(int)threads};
		warpBar.assign(threads / 32, Bar{32});
		emus.assign(threads, Emu{});
		for (unsigned t = 0; t < threads; t++) {
			Emu& e = emus[t];
			e.stack.resize(1 << 16);
			e.tid = {t, 0, 0};
			getcontext(&e.ctx);
			e.ctx.uc_stack.ss_sp = e.stack.data();
			e.ctx.uc_stack.ss_size = e.stack.size();
			e.ctx.uc_link = nullptr;
			makecontext(&e.ctx, trampoline, 0);
		}
		for (bool left = true; left;) {
			left = false;
			for (unsigned t = 0; t < threads; t++) {
				if (emus[t].done) continue;
				cur = t;
				swapcontext(&sched, &emus[t].ctx);
				left = left || !emus[t].done;
			}
		}
	}
}

int run(int B, int T, int H, int KVH, int hd) {
	std::mt19937 rng(B * 1000 + T * 7 + hd);
	std::normal_distribution<float> nd;
	int N = B * T, qw = H * hd, kw = KVH * hd, grp = H / KVH;
	std::vector<float> q(N * qw), k(N * kw), v(N * kw), dout(N * qw), dq(N * qw), dk(N * kw), dv(N * kw);
	for (auto* a : {&q, &k, &v, &dout, &dq, &dk, &dv}) for (auto& x : *a) x = nd(rng);
	double scale = 1 / std::sqrt((double)hd);
	// reference forward in double: out, lse
	std::vector<double> P((size_t)B * H * T * T), out(N * qw);
	std::vector<float> outf(N * qw), lse(B * H * T), D(B * H * T);
	for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) for (int i = 0; i < T; i++) {
		int kh = h / grp; double m = -1e300; std::vector<double> s(i + 1);
		for (int j = 0; j <= i; j++) { double a = 0; for (int d = 0; d < hd; d++) a += (double)q[(b*T+i)*qw+h*hd+d] * k[(b*T+j)*kw+kh*hd+d]; s[j] = a * scale; m = max(m, s[j]); }
		double l = 0; for (int j = 0; j <= i; j++) l += std::exp(s[j] - m);
		lse[(b*H+h)*T+i] = (float)(m + std::log(l));
		for (int j = 0; j <= i; j++) P[(((size_t)b*H+h)*T+i)*T+j] = std::exp(s[j] - m) / l;
		for (int d = 0; d < hd; d++) { double o = 0; for (int j = 0; j <= i; j++) o += P[(((size_t)b*H+h)*T+i)*T+j] * v[(b*T+j)*kw+kh*hd+d]; out[(b*T+i)*qw+h*hd+d] = o; outf[(b*T+i)*qw+h*hd+d] = (float)o; }
	}
	// reference backward in double
	std::vector<double> rdq(dq.begin(), dq.end()), rdk(dk.begin(), dk.end()), rdv(dv.begin(), dv.end());
	for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) for (int i = 0; i < T; i++) {
		int kh = h / grp; double Dd = 0;
		for (int d = 0; d < hd; d++) Dd += (double)dout[(b*T+i)*qw+h*hd+d] * outf[(b*T+i)*qw+h*hd+d];
		for (int j = 0; j <= i; j++) {
			double p = P[(((size_t)b*H+h)*T+i)*T+j], dp = 0;
			for (int d = 0; d < hd; d++) dp += (double)dout[(b*T+i)*qw+h*hd+d] * v[(b*T+j)*kw+kh*hd+d];
			double ds = p * (dp - Dd) * scale;
			for (int d = 0; d < hd; d++) {
				rdq[(b*T+i)*qw+h*hd+d] += ds * k[(b*T+j)*kw+kh*hd+d];
				rdk[(b*T+j)*kw+kh*hd+d] += ds * q[(b*T+i)*qw+h*hd+d];
				rdv[(b*T+j)*kw+kh*hd+d] += p * dout[(b*T+i)*qw+h*hd+d];
			}
		}
	}
	int W = hd <= 32 ? 32 : hd <= 64 ? 64 : hd <= 128 ? 128 : 256;
	float sc = (float)scale;
	unsigned rows = B * H * T;
	launch({(rows + 7) / 8, 1, 1}, 256, [&] { whale_attn_bwd_d_warp(D.data(), dout.data(), outf.data(), B, T, H, hd); });
	unsigned tiles = (T + 31) / 32;
	auto dqk = W == 32 ? whale_attn_bwd_dq_warp_32 : W == 64 ? whale_attn_bwd_dq_warp_64 : W == 128 ? whale_attn_bwd_dq_warp_128 : whale_attn_bwd_dq_warp_256;
	auto dkk = W == 32 ? whale_attn_bwd_dkdv_warp_32 : W == 64 ? whale_attn_bwd_dkdv_warp_64 : W == 128 ? whale_attn_bwd_dkdv_warp_128 : whale_attn_bwd_dkdv_warp_256;
	launch({tiles, (unsigned)H, (unsigned)B}, 256, [&] { dqk(dq.data(), dout.data(), D.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, KVH, hd, sc); });
	launch({tiles, (unsigned)KVH, (unsigned)B}, 256, [&] { dkk(dk.data(), dv.data(), dout.data(), D.data(), lse.data(), q.data(), k.data(), v.data(), B, T, H, KVH, hd, sc); });
	// The forward kernel against the reference's out and lse.
	std::vector<float> gout(N * qw), glse(B * H * T);
	auto fk = W == 32 ? whale_attn_fwd_warp_32 : W == 64 ? whale_attn_fwd_warp_64 : W == 128 ? whale_attn_fwd_warp_128 : whale_attn_fwd_warp_256;
	launch({tiles, (unsigned)H, (unsigned)B}, 256, [&] { fk(gout.data(), glse.data(), q.data(), k.data(), v.data(), B, T, H, KVH, hd, sc); });
	std::vector<double> rlse(lse.begin(), lse.end());
	auto err = [](const std::vector<float>& g, const std::vector<double>& w) { double m = 0, s = 0; for (size_t i = 0; i < g.size(); i++) { m = max(m, std::fabs(g[i] - w[i])); s = max(s, std::fabs(w[i])); } return m / s; };
	double e1 = err(dq, rdq), e2 = err(dk, rdk), e3 = err(dv, rdv), e4 = err(gout, out), e5 = err(glse, rlse);
	printf("B%d T%d H%d KV%d hd%d: out %.2e lse %.2e dq %.2e dk %.2e dv %.2e\n", B, T, H, KVH, hd, e4, e5, e1, e2, e3);
	return e1 > 1e-5 || e2 > 1e-5 || e3 > 1e-5 || e4 > 1e-5 || e5 > 1e-5;
}
int main() {
	setvbuf(stdout, NULL, _IONBF, 0);
	int bad = 0;
	if (getenv("ONE")) return run(1, 3, 2, 1, 32);
	bad += run(1, 1, 4, 2, 32);
	bad += run(1, 7, 4, 2, 6);
	bad += run(2, 33, 2, 1, 32);
	bad += run(1, 40, 4, 2, 128);
	bad += run(1, 35, 2, 1, 200);
	bad += run(1, 66, 4, 1, 64);
	printf(bad ? "FAIL\n" : "PASS\n");
	return bad;
}
