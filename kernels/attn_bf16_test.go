package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Modes runs f under every path the machine has: plain Go, AVX2 and,
// where the CPU has it, AVX-512.
func bf16Modes(t *testing.T, f func(t *testing.T)) {
	saved, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = saved, saved512 }()
	modes := []struct {
		name     string
		asm, avx bool
	}{{"go", false, false}}
	if saved {
		modes = append(modes, struct {
			name     string
			asm, avx bool
		}{"avx2", true, false})
	}
	if saved && hasAVX512() {
		modes = append(modes, struct {
			name     string
			asm, avx bool
		}{"avx512", true, true})
	}
	for _, m := range modes {
		useAsm, useAVX512 = m.asm, m.avx
		t.Run(m.name, f)
	}
}

// TestWidenBF16 checks the widening kernels against the exact Go widening
// over every length up to 100 (each vector width, a tail of every size)
// and special values, with guards after dst that must stay untouched.
func TestWidenBF16(t *testing.T) {
	bf16Modes(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 1))
		for n := 0; n <= 100; n++ {
			src := make([]uint16, n)
			for i := range src {
				src[i] = uint16(r.Uint32())
			}
			if n > 3 {
				src[0], src[1], src[2] = 0x7f80, 0xff80, 0x7fc1 // +Inf, -Inf, NaN
			}
			dst := make([]float32, n+8)
			const guard = float32(-7.25)
			for i := range dst {
				dst[i] = guard
			}
			widenBF16(dst[:n], src)
			for i, h := range src {
				if want := math.Float32bits(bf16ToFloat(h)); math.Float32bits(dst[i]) != want {
					t.Fatalf("n=%d: element %d is %#x, want %#x", n, i, math.Float32bits(dst[i]), want)
				}
			}
			for i := n; i < len(dst); i++ {
				if dst[i] != guard {
					t.Fatalf("n=%d: guard %d overwritten with %v", n, i-n, dst[i])
				}
			}
		}
	})
}

// FuzzWidenBF16 compares the widening kernels with the Go loop on any
// bytes.
func FuzzWidenBF16(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5})
	f.Add(make([]byte, 130))
	f.Fuzz(func(t *testing.T, b []byte) {
		src := make([]uint16, len(b)/2)
		for i := range src {
			src[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
		}
		dst := make([]float32, len(src))
		widenBF16(dst, src)
		for i, h := range src {
			if math.Float32bits(dst[i]) != uint32(h)<<16 {
				t.Fatalf("element %d of %d: %#x from %#x", i, len(src), math.Float32bits(dst[i]), h)
			}
		}
	})
}

// TestAttentionKVBF16 checks decode attention over bfloat16 caches in two
// ways. (1) It must give, bit for bit, what it gives over float32 caches
// holding the same values rounded to bfloat16: the kernels widen the
// values exactly and run the float32 FMA chains in the same order (so
// chunking the positions changes nothing). (2) Against the float64
// reference over the unrounded values, the error is what the rounding
// explains: each key and value moves by at most 2^-9 of itself, so a
// score s_p = scale·q·k_p by at most ε_p = 2^-9·scale·Σ_d|q_d·k_pd|, each
// probability by a factor within e^(±2·max ε), and an output (a convex
// mix of values) by at most 2^-9·max|v| + (e^(2·max ε) − 1)·2·max|v|; the
// test allows that bound plus 1e-5 relative for the float32 sums. Shapes
// cover every head grouping the kernels chunk (1, 2, 4, 8 query heads a KV
// head) and so every score kernel and value tile (1×64, 1×32 and 1×8 at hd
// 104), a head dimension that is no multiple of 8 (the widening path),
// capacities with a narrow last block, chunks of positions (hd 8 widens
// 512 positions at a time: n up to 700 crosses it), a prefix cache and
// several rows; in Go, AVX2 and AVX-512 modes.
func TestAttentionKVBF16(t *testing.T) {
	bf16Modes(t, func(t *testing.T) {
		for _, sh := range [][3]int{{4, 4, 8}, {8, 2, 32}, {8, 1, 16}, {6, 2, 6}, {16, 8, 128}, {12, 12, 64}, {4, 4, 104}} {
			H, KVH, hd := sh[0], sh[1], sh[2]
			for _, n := range []int{1, 9, 70, KVBlock + 9, 700} {
				for _, rows := range []int{1, 3} {
					if rows > n {
						continue
					}
					name := fmt.Sprintf("H%dKV%dhd%d/n%d/rows%d", H, KVH, hd, n, rows)
					testAttentionKVBF16(t, name, H, KVH, hd, n, rows)
				}
			}
		}
	})
}

func testAttentionKVBF16(t *testing.T, name string, H, KVH, hd, n, rows int) {
	be, ref := NewCPU(), NewCPU64()
	r := rand.New(rand.NewPCG(uint64(n), uint64(hd)))
	cap := n + 3
	randn := func(k int) []float32 {
		x := make([]float32, k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	kv, vv, qv := randn(n*KVH*hd), randn(n*KVH*hd), randn(rows*H*hd)
	round := func(x []float32) []float32 {
		h := make([]BF16, len(x))
		ToBF16(h, x)
		y := make([]float32, len(x))
		FromBF16(y, h)
		return y
	}
	load := func(b Backend, x []float32) Tensor { t := b.Alloc(len(x)); b.Load(t, x); return t }
	// The span over caches k, v of backend b, with its first KVBlock
	// positions moved to a prefix cache when the rows start past them.
	span := func(b Backend, k, v Tensor) KVSpan {
		sp := KVSpan{K: k, V: v, Cap: cap, Rows: rows, Pos0: n - rows}
		if n-rows < KVBlock {
			return sp
		}
		pn := KVBlock
		alloc := b.Alloc
		if isBF16(k) {
			alloc = b.AllocBF16
		}
		pk, pv, ok, ov := alloc(KVH*(pn+1)*hd), alloc(KVH*(pn+1)*hd), alloc(KVH*cap*hd), alloc(KVH*cap*hd)
		b.CacheCopy(pk, k, Keys, 0, 0, pn, KVH, hd, pn+1, cap)
		b.CacheCopy(pv, v, Values, 0, 0, pn, KVH, hd, pn+1, cap)
		b.CacheCopy(ok, k, Keys, 0, pn, n-pn, KVH, hd, cap, cap)
		b.CacheCopy(ov, v, Values, 0, pn, n-pn, KVH, hd, cap, cap)
		sp.K, sp.V, sp.PK, sp.PV, sp.PCap, sp.PN = ok, ov, pk, pv, pn+1, pn
		return sp
	}
	run := func(b Backend, k, v Tensor, keys, vals []float32) []float64 {
		b.CacheWrite(k, load(b, keys), Keys, 0, n, KVH, hd, cap)
		b.CacheWrite(v, load(b, vals), Values, 0, n, KVH, hd, cap)
		out := b.Alloc(rows * H * hd)
		b.AttentionKV(out, load(b, qv), []KVSpan{span(b, k, v)}, H, KVH, hd)
		h := make([]float64, out.Len())
		b.Store64(h, out)
		return h
	}
	got := run(be, be.AllocBF16(KVH*cap*hd), be.AllocBF16(KVH*cap*hd), kv, vv)
	f32 := run(be, be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd), round(kv), round(vv))
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(f32[i]) {
			t.Fatalf("%s: output %d over bfloat16 caches is %v, over float32 caches of the rounded values %v", name, i, got[i], f32[i])
		}
	}
	want := run(ref, ref.Alloc(KVH*cap*hd), ref.Alloc(KVH*cap*hd), kv, vv)
	// The bound of the doc comment, from the data.
	scale := 1 / math.Sqrt(float64(hd))
	var eps, vmax float64
	grp := H / KVH
	for i := 0; i < rows; i++ {
		for h := 0; h < H; h++ {
			kh := h / grp
			for p := 0; p < n; p++ {
				var s float64
				for d := 0; d < hd; d++ {
					s += math.Abs(float64(qv[(i*H+h)*hd+d]) * float64(kv[(p*KVH+kh)*hd+d]))
				}
				eps = max(eps, math.Ldexp(scale*s, -9))
			}
		}
	}
	for _, x := range vv {
		vmax = max(vmax, math.Abs(float64(x)))
	}
	tol := math.Ldexp(vmax, -9) + math.Expm1(2*eps)*2*vmax + 1e-5*vmax
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol) {
			t.Fatalf("%s: output %d is %v, float64 over unrounded caches %v: off by %.3g, bound %.3g", name, i, got[i], want[i], d, tol)
		}
	}
}

// BenchmarkAttentionKVDecodeKVBF16 times one decoding step's attention
// over the embedded model's heads (8 query over 4 KV, head dimension 32)
// for 64 sequences 430 positions deep, the six layers' caches in turn (26
// MB in float32, past the last-level cache of the machines measured), over
// float32 caches and over bfloat16 ones (docs/PERFORMANCE.md alternates
// the two from one test binary).
func BenchmarkAttentionKVDecodeKVBF16(b *testing.B) {
	const rows, pos, H, KVH, hd, layers = 64, 430, 8, 4, 32, 6
	for _, bf := range []bool{false, true} {
		b.Run(map[bool]string{false: "f32", true: "bf16"}[bf], func(b *testing.B) {
			be := NewCPU()
			r := rand.New(rand.NewPCG(1, 1))
			cap := (pos + KVCapGranule) / KVCapGranule * KVCapGranule
			alloc := be.Alloc
			if bf {
				alloc = be.AllocBF16
			}
			src := be.Alloc(cap * KVH * hd)
			h := make([]float32, src.Len())
			for i := range h {
				h[i] = float32(r.NormFloat64())
			}
			be.Load(src, h)
			spans := make([][]KVSpan, layers)
			for l := range spans {
				for s := 0; s < rows; s++ {
					kc, vc := alloc(KVH*cap*hd), alloc(KVH*cap*hd)
					be.CacheWrite(kc, src, Keys, 0, cap, KVH, hd, cap)
					be.CacheWrite(vc, src, Values, 0, cap, KVH, hd, cap)
					spans[l] = append(spans[l], KVSpan{K: kc, V: vc, Cap: cap, QRow: s, Rows: 1, Pos0: pos})
				}
			}
			q, out := be.Alloc(rows*H*hd), be.Alloc(rows*H*hd)
			be.Load(q, h[:rows*H*hd])
			for i := 0; b.Loop(); i++ {
				be.AttentionKV(out, q, spans[i%layers], H, KVH, hd)
			}
		})
	}
}
