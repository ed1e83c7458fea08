package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// fdCheck checks a backward op against central finite differences in
// float64: for L = Σ dout·fwd(x), ∂L/∂x[i] from bwd must match
// (L(x+h) - L(x-h)) / 2h. With h = 1e-5 the truncation error is O(h²·f”')
// ≈ 1e-10 and rounding O(1e-16/h) ≈ 1e-11, so 1e-7 relative to the
// gradient's largest entry leaves a wide margin while any wrong term fails.
func fdCheck(t *testing.T, name string, x Tensor, fwd func() Tensor, bwd func(dx, dout Tensor)) {
	t.Helper()
	be := NewCPU64()
	rng := rand.New(rand.NewPCG(7, uint64(len(name))))
	xs := host64(be, x)
	y := fwd()
	r := make([]float64, y.Len())
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	dout := be.Alloc(len(r))
	be.Load64(dout, r)
	dx := be.Alloc(len(xs))
	bwd(dx, dout)
	got := host64(be, dx)
	loss := func() float64 {
		be.Load64(x, xs)
		ys := host64(be, fwd())
		var s float64
		for i, v := range ys {
			s += v * r[i]
		}
		return s
	}
	const h = 1e-5
	num := make([]float64, len(xs))
	for i := range xs {
		x0 := xs[i]
		xs[i] = x0 + h
		lp := loss()
		xs[i] = x0 - h
		lm := loss()
		xs[i] = x0
		num[i] = (lp - lm) / (2 * h)
	}
	be.Load64(x, xs)
	if e := relErr(got, num); !(e <= 1e-7) {
		t.Errorf("%s: analytic vs numeric gradient relative error %.3g > 1e-7\nanalytic %v\nnumeric  %v", name, e, got, num)
	}
}

func rnd64(be *CPU[float64], rng *rand.Rand, n int, lo float64) Tensor {
	h := make([]float64, n)
	for i := range h {
		h[i] = lo + rng.NormFloat64()
	}
	t := be.Alloc(n)
	be.Load64(t, h)
	return t
}

func TestCPUBackwardFiniteDifferences(t *testing.T) {
	be := NewCPU64()
	rng := rand.New(rand.NewPCG(3, 4))
	{
		rows, C := 3, 5
		x, w := rnd64(be, rng, rows*C, 0), rnd64(be, rng, C, 1)
		out, rstd := be.Alloc(rows*C), be.Alloc(rows)
		fwd := func() Tensor { be.RMSNorm(out, rstd, x, w, rows, C, 1e-5); return out }
		fdCheck(t, "RMSNorm/x", x, fwd, func(dx, d Tensor) {
			fwd()
			be.RMSNormBackward(dx, be.Alloc(C), d, x, w, rstd, rows, C)
		})
		fdCheck(t, "RMSNorm/w", w, fwd, func(dw, d Tensor) {
			fwd()
			be.RMSNormBackward(be.Alloc(rows*C), dw, d, x, w, rstd, rows, C)
		})
	}
	{
		rows, H, hd := 3, 2, 6
		pos := []int32{0, 5, 1234}
		x, out := rnd64(be, rng, rows*H*hd, 0), be.Alloc(rows*H*hd)
		fdCheck(t, "RoPE", x, func() Tensor { be.RoPE(out, x, pos, rows, H, hd, 1e4); return out },
			func(dx, d Tensor) { be.RoPEBackward(dx, d, pos, rows, H, hd, 1e4) })
	}
	{
		n := 7
		g, u, out := rnd64(be, rng, n, 0), rnd64(be, rng, n, 0), be.Alloc(n)
		fwd := func() Tensor { be.SwiGLU(out, g, u); return out }
		fdCheck(t, "SwiGLU/gate", g, fwd, func(dg, d Tensor) { be.SwiGLUBackward(dg, be.Alloc(n), d, g, u) })
		fdCheck(t, "SwiGLU/up", u, fwd, func(du, d Tensor) { be.SwiGLUBackward(be.Alloc(n), du, d, g, u) })
	}
	{
		rows, V := 4, 6
		logits, loss := rnd64(be, rng, rows*V, 0), be.Alloc(rows)
		tg := []int32{1, 0, 5, -1}
		w := []float32{0.5, 1, 0.25, 0}
		fdCheck(t, "CrossEntropy", logits, func() Tensor { be.CrossEntropy(loss, Tensor{}, logits, tg, w, rows, V); return loss },
			func(dl, d Tensor) {
				// dlogits is the gradient of Σ loss; scale each row by dout.
				g := be.Alloc(rows * V)
				be.CrossEntropy(be.Alloc(rows), g, logits, tg, w, rows, V)
				gs, ds := host64(be, g), host64(be, d)
				for r := range rows {
					for j := range V {
						gs[r*V+j] *= ds[r]
					}
				}
				be.Load64(dl, gs)
			})
	}
	{
		rows, n := 5, 3
		out, bias := rnd64(be, rng, rows*n, 0), rnd64(be, rng, n, 0)
		base := host64(be, out)
		fdCheck(t, "Bias", bias, func() Tensor { be.Load64(out, base); be.BiasAdd(out, bias, rows, n); return out },
			func(db, d Tensor) { be.BiasBackward(db, d, rows, n) })
	}
	{
		V, C := 5, 3
		tok := []int32{2, 0, 2, 4}
		table, out := rnd64(be, rng, V*C, 0), be.Alloc(len(tok)*C)
		fdCheck(t, "Embedding", table, func() Tensor { be.Embedding(out, table, tok, C); return out },
			func(dt, d Tensor) { be.EmbeddingBackward(dt, d, tok, C) })
	}
	for _, sz := range [][5]int{{1, 3, 2, 2, 4}, {2, 4, 4, 2, 2}, {2, 3, 3, 3, 2}, {1, attnBlock + 3, 2, 1, 2}} {
		B, T, H, KVH, hd := sz[0], sz[1], sz[2], sz[3], sz[4]
		N := B * T
		q, k, v := rnd64(be, rng, N*H*hd, 0), rnd64(be, rng, N*KVH*hd, 0), rnd64(be, rng, N*KVH*hd, 0)
		out, lse := be.Alloc(N*H*hd), be.Alloc(B*H*T)
		fwd := func() Tensor { be.Attention(out, lse, q, k, v, B, T, H, KVH, hd); return out }
		name := fmt.Sprintf("Attention/B%dT%dH%dKV%d", B, T, H, KVH)
		bwd := func(which int) func(dx, d Tensor) {
			return func(dx, d Tensor) {
				fwd()
				g := []Tensor{be.Alloc(N * H * hd), be.Alloc(N * KVH * hd), be.Alloc(N * KVH * hd)}
				g[which] = dx
				be.AttentionBackward(g[0], g[1], g[2], d, out, lse, q, k, v, B, T, H, KVH, hd)
			}
		}
		fdCheck(t, name+"/q", q, fwd, bwd(0))
		fdCheck(t, name+"/k", k, fwd, bwd(1))
		fdCheck(t, name+"/v", v, fwd, bwd(2))
	}
}

// TestCPUForwardReferences checks forward ops against direct formulas
// written independently of the kernels (float64, so ≤ 1e-12 relative).
func TestCPUForwardReferences(t *testing.T) {
	be := NewCPU64()
	rng := rand.New(rand.NewPCG(5, 6))
	B, T, H, KVH, hd := 2, attnBlock+5, 4, 2, 6
	N := B * T
	q, k, v := rnd64(be, rng, N*H*hd, 0), rnd64(be, rng, N*KVH*hd, 0), rnd64(be, rng, N*KVH*hd, 0)
	out, lse := be.Alloc(N*H*hd), be.Alloc(B*H*T)
	be.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
	qs, ks, vs, os := host64(be, q), host64(be, k), host64(be, v), host64(be, out)
	want := make([]float64, len(os))
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			kh := h * KVH / H
			for i := 0; i < T; i++ {
				w := make([]float64, T)
				var z float64
				for j := 0; j <= i; j++ {
					var s float64
					for d := 0; d < hd; d++ {
						s += qs[((b*T+i)*H+h)*hd+d] * ks[((b*T+j)*KVH+kh)*hd+d]
					}
					w[j] = math.Exp(s / math.Sqrt(float64(hd)))
					z += w[j]
				}
				for j := 0; j <= i; j++ {
					for d := 0; d < hd; d++ {
						want[((b*T+i)*H+h)*hd+d] += w[j] / z * vs[((b*T+j)*KVH+kh)*hd+d]
					}
				}
			}
		}
	}
	if e := relErr(os, want); e > 1e-12 {
		t.Errorf("Attention vs direct formula: relative error %.3g", e)
	}
	// AttentionKV over the same data, one span per sequence with caches
	// holding that sequence's keys, must give the same rows (it sums in
	// another order, hence the same 1e-12 bound).
	kv := be.Alloc(N * H * hd)
	var spans []KVSpan
	for b := 0; b < B; b++ {
		kc, vc := be.Alloc(KVH*(T+3)*hd), be.Alloc(KVH*(T+3)*hd)
		be.CacheWrite(kc, k.View(b*T*KVH*hd, T*KVH*hd), Keys, 0, T, KVH, hd, T+3)
		be.CacheWrite(vc, v.View(b*T*KVH*hd, T*KVH*hd), Values, 0, T, KVH, hd, T+3)
		spans = append(spans, KVSpan{K: kc, V: vc, Cap: T + 3, QRow: b * T, Rows: T, Pos0: 0})
	}
	be.AttentionKV(kv, q, spans, H, KVH, hd)
	if e := relErr(host64(be, kv), want); e > 1e-12 {
		t.Errorf("AttentionKV vs direct formula: relative error %.3g", e)
	}

	// RoPE: rotate-half pairs (i, i+hd/2) by pos·θ^(-2i/hd).
	x := rnd64(be, rng, 2*hd, 0)
	r := be.Alloc(2 * hd)
	be.RoPE(r, x, []int32{3, 77}, 2, 1, hd, 500)
	xs, rs := host64(be, x), host64(be, r)
	for row, p := range []float64{3, 77} {
		for i := 0; i < hd/2; i++ {
			a := p / math.Pow(500, float64(2*i)/float64(hd))
			x0, x1 := xs[row*hd+i], xs[row*hd+i+hd/2]
			if math.Abs(rs[row*hd+i]-(x0*math.Cos(a)-x1*math.Sin(a))) > 1e-12 ||
				math.Abs(rs[row*hd+i+hd/2]-(x1*math.Cos(a)+x0*math.Sin(a))) > 1e-12 {
				t.Fatalf("RoPE row %d pair %d differs from the rotate-half formula", row, i)
			}
		}
	}
}
