package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %v, want %v bit for bit", what, i, got[i], want[i])
		}
	}
}

// testPackedCase checks GemmPackedNT and GemmPackedNTBF16 on guarded
// slices: against the float64 reference, against each other (bf16 panels
// must give the bits of float32 panels holding the widened values) and, past
// RowInvariantRows, against Gemm and GemmBF16NT.
func testPackedCase(t *testing.T, r *rand.Rand, m, k, n int, acc bool) {
	t.Helper()
	what := fmt.Sprintf("packed m=%d k=%d n=%d acc=%v", m, k, n, acc)
	a, aw := padded(m*k, math.Float32frombits(guardBits))
	randFill(r, a)
	bh := make([]BF16, k*n)
	randBF16(r, bh)
	b := make([]float32, k*n)
	FromBF16(b, bh) // float32 weights equal to the bf16 ones
	pf, pfw := padded(PackedNTLen(k, n), math.Float32frombits(guardBits))
	PackNT(pf, b, k, n)
	checkGuards(t, pfw, len(pf), what+" PackNT dst")
	phw := make([]BF16, PackedNTLen(k, n)+2*guardPad)
	for i := range phw {
		phw[i] = 0x7fc1
	}
	ph := phw[guardPad : guardPad+PackedNTLen(k, n)]
	PackNTBF16(ph, bh, k, n)
	for i, v := range phw {
		if (i < guardPad || i >= guardPad+len(ph)) && v != 0x7fc1 {
			t.Fatalf("%s: PackNTBF16 wrote guard element %d", what, i)
		}
	}
	c0 := make([]float32, m*n)
	randFill(r, c0)
	want := widen(c0)
	GemmRef(NT, want, widen(a), widen(b), m, k, n, acc)

	out, ow := padded(m*n, math.Float32frombits(guardBits))
	copy(out, c0)
	GemmPackedNT(out, a, pf, m, k, n, acc)
	checkGuards(t, ow, m*n, what+" out")
	checkGuards(t, aw, m*k, what+" a")
	mc := 0.0
	if acc {
		mc = maxAbs(c0)
	}
	tol := gemmTolerance(k, maxAbs(a), 1, mc)
	for i, g := range out {
		if d := math.Abs(float64(g) - want[i]); !(d <= tol) {
			t.Fatalf("%s: out[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", what, i/n, i%n, g, want[i], d, tol)
		}
	}

	outH, ohw := padded(m*n, math.Float32frombits(guardBits))
	copy(outH, c0)
	GemmPackedNTBF16(outH, a, ph, m, k, n, acc)
	checkGuards(t, ohw, m*n, what+" bf16 out")
	sameBits(t, what+": GemmPackedNTBF16 vs GemmPackedNT", outH, out)

	if m > RowInvariantRows {
		g := append([]float32(nil), c0...)
		Gemm(NT, g, a, b, m, k, n, acc)
		sameBits(t, what+": GemmPackedNT vs Gemm NT", out, g)
		g = append(g[:0], c0...)
		GemmBF16NT(g, a, bh, m, k, n, acc)
		sameBits(t, what+": GemmPackedNT vs GemmBF16NT", out, g)
	}
}

func TestGemmPackedNT(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(41, 42))
		for _, acc := range []bool{false, true} {
			for _, m := range []int{1, 2, 3, 4, 5, 7, 16, 20, 23, 24, 25, 64} {
				for _, k := range []int{1, 7, 8, 17, 64} {
					for _, n := range []int{1, 15, 16, 17, 63, 64, 65, 130} {
						testPackedCase(t, r, m, k, n, acc)
					}
				}
			}
			for _, s := range [][3]int{{1, 600, 200}, {3, 300, 129}, {40, 520, 70}, {150, 257, 33}} {
				testPackedCase(t, r, s[0], s[1], s[2], acc)
			}
		}
	})
}

// TestGemmPackedNTRowInvariant: on packed weights a row's bits do not depend
// on the batch (any m, any offset) nor on the thread count.
func TestGemmPackedNTRowInvariant(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(43, 44))
		k, n := 300, 200
		a := make([]float32, 100*k)
		randFill(r, a)
		bh := make([]BF16, k*n)
		randBF16(r, bh)
		ph := make([]BF16, PackedNTLen(k, n))
		PackNTBF16(ph, bh, k, n)
		big := make([]float32, 100*n)
		GemmPackedNTBF16(big, a, ph, 100, k, n, false)
		for _, th := range []int{1, 2, 3} {
			for _, s := range [][2]int{{0, 1}, {7, 1}, {3, 4}, {5, 5}, {11, 30}, {1, 99}} {
				lo, m := s[0], s[1]
				out := make([]float32, m*n)
				withThreads(th, func() { GemmPackedNTBF16(out, a[lo*k:(lo+m)*k], ph, m, k, n, false) })
				sameBits(t, fmt.Sprintf("rows %d..%d with %d threads", lo, lo+m, th), out, big[lo*n:(lo+m)*n])
			}
		}
	})
}

func TestPackNTBF16FromFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	k, n := 37, 41
	b := make([]float32, k*n)
	randFill(r, b)
	bh := make([]BF16, k*n)
	ToBF16(bh, b)
	p1 := make([]BF16, PackedNTLen(k, n))
	p2 := make([]BF16, PackedNTLen(k, n))
	PackNTBF16(p1, b, k, n)
	PackNTBF16(p2, bh, k, n)
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("element %d: packing float32 gives %#04x, packing ToBF16 gives %#04x", i, p1[i], p2[i])
		}
	}
}

// TestPackedViews: of a matrix packed whole, the view at PackedNTLen(k, j0)
// of PackedNTLen(k, j) elements, j0 a multiple of 64 and j one too or
// reaching n, is the packed form of rows j0..j0+j-1 alone (what a model's
// fused q, k, v relies on), for both packers.
func TestPackedViews(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	k, n := 37, 232 // three whole groups of 64 columns and 40 past them
	bh := make([]BF16, k*n)
	randBF16(r, bh)
	b := make([]float32, k*n)
	FromBF16(b, bh)
	wholeH := make([]BF16, PackedNTLen(k, n))
	PackNTBF16(wholeH, bh, k, n)
	wholeF := make([]float32, PackedNTLen(k, n))
	PackNT(wholeF, b, k, n)
	for _, v := range [][2]int{{0, 64}, {64, 64}, {64, 128}, {128, 104}, {192, 40}, {0, 232}} {
		j0, j := v[0], v[1]
		aloneH := make([]BF16, PackedNTLen(k, j))
		PackNTBF16(aloneH, bh[j0*k:(j0+j)*k], k, j)
		viewH := wholeH[PackedNTLen(k, j0):][:len(aloneH)]
		aloneF := make([]float32, PackedNTLen(k, j))
		PackNT(aloneF, b[j0*k:(j0+j)*k], k, j)
		viewF := wholeF[PackedNTLen(k, j0):][:len(aloneF)]
		for i := range aloneH {
			if viewH[i] != aloneH[i] {
				t.Fatalf("PackNTBF16 rows %d..%d: view element %d = %#04x, packed alone %#04x", j0, j0+j, i, viewH[i], aloneH[i])
			}
			if math.Float32bits(viewF[i]) != math.Float32bits(aloneF[i]) {
				t.Fatalf("PackNT rows %d..%d: view element %d = %v, packed alone %v", j0, j0+j, i, viewF[i], aloneF[i])
			}
		}
	}
}

func FuzzGemmPackedNT(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint8(17), uint8(70), false)
	f.Add(uint64(2), uint8(30), uint8(9), uint8(64), true)
	f.Fuzz(func(t *testing.T, seed uint64, m, k, n uint8, acc bool) {
		r := rand.New(rand.NewPCG(seed, 47))
		mm, kk, nn := 1+int(m)%130, 1+int(k)%130, 1+int(n)%130
		eachImpl(t, func(t *testing.T) { testPackedCase(t, r, mm, kk, nn, acc) })
	})
}

// BenchmarkGemmPackedNTBF16 runs batch-1 and batched decoding of a
// 110M-parameter model on packed bf16 weights in huge pages: one token's
// products (208 MB of weights) per iteration, for 1, 8 and 64 sequences.
func BenchmarkGemmPackedNTBF16(b *testing.B) {
	type mat struct {
		w    []BF16
		k, n int
	}
	var mats []mat
	bytes := 0
	r := rand.New(rand.NewPCG(1, 3))
	add := func(k, n int) {
		w := make([]BF16, k*n)
		randBF16(r, w)
		p := HugeBF16(PackedNTLen(k, n))
		PackNTBF16(p, w, k, n)
		mats = append(mats, mat{p, k, n})
		bytes += 2 * k * n
	}
	for range 12 {
		for range 4 {
			add(768, 768)
		}
		add(768, 2048)
		add(768, 2048)
		add(2048, 768)
	}
	add(768, 32000)
	defer func() {
		for _, m := range mats {
			FreeHuge(m.w)
		}
	}()
	for _, rows := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("token110M_m%d", rows), func(b *testing.B) {
			x := make([]float32, rows*2048)
			randFill(r, x)
			out := make([]float32, rows*32000)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				for _, m := range mats {
					GemmPackedNTBF16(out, x, m.w, rows, m.k, m.n, false)
				}
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(float64(bytes)*float64(b.N)/sec/1e9, "GB/s")
			b.ReportMetric(float64(rows)*float64(b.N)/sec, "tokens/s")
		})
	}
	// The head alone: one product of 49 MB, where the per-product start
	// (fork, prefetcher ramp-up) weighs nothing.
	b.Run("head110M_m1", func(b *testing.B) {
		h := mats[len(mats)-1]
		x := make([]float32, h.k)
		randFill(r, x)
		out := make([]float32, h.n)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			GemmPackedNTBF16(out, x, h.w, 1, h.k, h.n, false)
		}
		b.ReportMetric(float64(2*h.k*h.n)*float64(b.N)/time.Since(start).Seconds()/1e9, "GB/s")
	})
}
