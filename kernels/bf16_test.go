package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestBF16KnownValues(t *testing.T) {
	f := math.Float32frombits
	cases := []struct {
		in   float32
		want BF16
	}{
		{1, 0x3f80},
		{-2, 0xc000},
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{float32(math.Inf(1)), 0x7f80},
		{float32(math.Inf(-1)), 0xff80},
		{f(0x3f808000), 0x3f80}, // tie, kept bit even: stays
		{f(0x3f818000), 0x3f82}, // tie, kept bit odd: rounds up to even
		{f(0x3f808001), 0x3f81}, // just above the tie: up
		{f(0x3f807fff), 0x3f80}, // just below the tie: down
		{f(0x7f7fffff), 0x7f80}, // max float32 rounds beyond max bf16: Inf
		{f(0x00000001), 0x0000}, // smallest subnormal rounds to zero
		{f(0x00018000), 0x0002}, // subnormal tie to even
		{3.140625, 0x4049},      // exactly representable
	}
	for _, c := range cases {
		var got [1]BF16
		ToBF16(got[:], []float32{c.in})
		if got[0] != c.want {
			t.Errorf("ToBF16(%v = %#08x) = %#04x, want %#04x", c.in, math.Float32bits(c.in), got[0], c.want)
		}
	}
	for _, nan := range []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0x7fffffff, 0xff800001} {
		var h [1]BF16
		ToBF16(h[:], []float32{f(nan)})
		var back [1]float32
		FromBF16(back[:], h[:])
		if !math.IsNaN(float64(back[0])) {
			t.Errorf("ToBF16(NaN %#08x) = %#04x, not a NaN", nan, h[0])
		}
		if h[0]>>15 != BF16(nan>>31) {
			t.Errorf("ToBF16(NaN %#08x) = %#04x lost the sign", nan, h[0])
		}
	}
}

// refBF16 rounds f to bf16 by comparing the two neighbours in float64: an
// independent statement of round-to-nearest-even for finite f.
func refBF16(f float32) BF16 {
	u := math.Float32bits(f)
	lo := BF16(u >> 16)
	hi := lo + 1
	dl := math.Abs(float64(f) - float64(bf16ToFloat(lo)))
	hiV := float64(bf16ToFloat(hi))
	if hi&0x7fff == 0x7f80 { // rounding up from the top binade gives Inf
		hiV = math.Copysign(math.Ldexp(1, 128), float64(f))
	}
	dh := math.Abs(float64(f) - hiV)
	switch {
	case dl < dh:
		return lo
	case dh < dl:
		return hi
	case lo&1 == 0:
		return lo
	}
	return hi
}

func TestBF16RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 100000 {
		u := r.Uint32()
		f := math.Float32frombits(u)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		var h [1]BF16
		ToBF16(h[:], []float32{f})
		if want := refBF16(f); h[0] != want {
			t.Fatalf("ToBF16(%#08x) = %#04x, want %#04x", u, h[0], want)
		}
		// Every bf16 widens exactly and converts back to itself.
		var w [1]float32
		FromBF16(w[:], h[:])
		var h2 [1]BF16
		ToBF16(h2[:], w[:])
		if h2[0] != h[0] {
			t.Fatalf("bf16 %#04x does not survive a round trip: %#04x", h[0], h2[0])
		}
	}
}

func FuzzBF16(f *testing.F) {
	f.Add(uint32(0x3f808000))
	f.Add(uint32(0x7f7fffff))
	f.Fuzz(func(t *testing.T, u uint32) {
		x := math.Float32frombits(u)
		var h [1]BF16
		ToBF16(h[:], []float32{x})
		if math.IsNaN(float64(x)) {
			if !math.IsNaN(float64(bf16ToFloat(h[0]))) {
				t.Fatalf("NaN %#08x became %#04x", u, h[0])
			}
			return
		}
		if math.IsInf(float64(x), 0) {
			if h[0] != BF16(u>>16) {
				t.Fatalf("Inf %#08x became %#04x", u, h[0])
			}
			return
		}
		if want := refBF16(x); h[0] != want {
			t.Fatalf("ToBF16(%#08x) = %#04x, want %#04x", u, h[0], want)
		}
	})
}

func randBF16(r *rand.Rand, x []BF16) {
	for i := range x {
		x[i] = bf16FromFloat(2*r.Float32() - 1)
	}
}

// bf16Gemms are the products over a bfloat16 B, with their references.
var bf16Gemms = []struct {
	name string
	fn   func(out, a []float32, b []BF16, m, k, n int, acc bool)
	ref  func(out, a []float64, b []BF16, m, k, n int, acc bool)
	// layout of Gemm on the widened B, which the product must equal bit
	// for bit (0: not required; NT's small-m dot tiles sum in another
	// order than Gemm's).
	same Layout
}{
	{"GemmBF16NT", GemmBF16NT, GemmBF16NTRef[float64], 0},
	{"GemmBF16NN", GemmBF16NN, GemmBF16NNRef[float64], NN},
}

func testGemmBF16Case(t *testing.T, r *rand.Rand, g int, m, k, n int, acc bool) {
	t.Helper()
	p := bf16Gemms[g]
	a, aw := padded(m*k, math.Float32frombits(guardBits))
	randFill(r, a)
	bw := make([]BF16, k*n+2*guardPad)
	for i := range bw {
		bw[i] = 0x7fc1 // NaN guards: reading past b poisons the result
	}
	b := bw[guardPad : guardPad+k*n]
	randBF16(r, b)
	out, ow := padded(m*n, math.Float32frombits(guardBits))
	randFill(r, out)
	want := widen(out)
	p.ref(want, widen(a), b, m, k, n, acc)
	var same []float32
	if p.same != 0 {
		same = append([]float32(nil), out...)
		wide := make([]float32, k*n)
		FromBF16(wide, b)
		Gemm(p.same, same, a, wide, m, k, n, acc)
	}
	c0 := maxAbs(out)
	if !acc {
		c0 = 0
	}
	p.fn(out, a, b, m, k, n, acc)
	what := fmt.Sprintf("%s m=%d k=%d n=%d acc=%v", p.name, m, k, n, acc)
	checkGuards(t, ow, m*n, what+" out")
	checkGuards(t, aw, m*k, what+" a")
	tol := gemmTolerance(k, maxAbs(a), 1, c0) // |b| ≤ 1
	for i, g := range out {
		if d := math.Abs(float64(g) - want[i]); !(d <= tol) {
			t.Fatalf("%s: out[%d,%d] = %v, want %v (|diff| %.3g > tol %.3g)", what, i/n, i%n, g, want[i], d, tol)
		}
		if same != nil && math.Float32bits(g) != math.Float32bits(same[i]) {
			t.Fatalf("%s: out[%d,%d] = %v, Gemm on the widened B gives %v", what, i/n, i%n, g, same[i])
		}
	}
}

func TestGemmBF16MatchesReference(t *testing.T) {
	for g, p := range bf16Gemms {
		t.Run(p.name, func(t *testing.T) {
			eachImpl(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(13, 14))
				for _, acc := range []bool{false, true} {
					for _, m := range gemmSizes[:9] {
						for _, k := range gemmSizes[:9] {
							for _, n := range gemmSizes[:9] {
								testGemmBF16Case(t, r, g, m, k, n, acc)
							}
						}
					}
					for range 40 {
						m := gemmSizes[r.IntN(len(gemmSizes))]
						k := gemmSizes[r.IntN(len(gemmSizes))]
						n := gemmSizes[r.IntN(len(gemmSizes))]
						testGemmBF16Case(t, r, g, m, k, n, acc)
					}
					testGemmBF16Case(t, r, g, 100, 70, 9, acc)   // several row blocks
					testGemmBF16Case(t, r, g, 40, 300, 50, acc)  // packed panels, two K blocks
					testGemmBF16Case(t, r, g, 1, 768, 300, acc)  // one row
					testGemmBF16Case(t, r, g, 3, 700, 130, acc)  // few rows: Gemm NN reads B in place
					testGemmBF16Case(t, r, g, 64, 96, 1030, acc) // several N blocks
				}
			})
		})
	}
}

func TestGemmBF16ThreadsBitIdentical(t *testing.T) {
	for _, p := range bf16Gemms {
		t.Run(p.name, func(t *testing.T) {
			eachImpl(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(15, 16))
				for _, s := range [][3]int{{1, 768, 1001}, {7, 203, 600}, {60, 96, 130}, {300, 96, 130}} {
					m, k, n := s[0], s[1], s[2]
					a := make([]float32, m*k)
					randFill(r, a)
					b := make([]BF16, k*n)
					randBF16(r, b)
					var ref []float32
					for _, th := range []int{1, 2, 3} {
						out := make([]float32, m*n)
						withThreads(th, func() { p.fn(out, a, b, m, k, n, false) })
						if ref == nil {
							ref = out
							continue
						}
						for i := range out {
							if math.Float32bits(out[i]) != math.Float32bits(ref[i]) {
								t.Fatalf("m=%d k=%d n=%d: out[%d] = %v with %d threads, %v with 1", m, k, n, i, out[i], th, ref[i])
							}
						}
					}
				}
			})
		})
	}
}

func FuzzGemmBF16(f *testing.F) {
	f.Add(uint64(1), uint8(1), uint8(17), uint8(33), false, false)
	f.Add(uint64(2), uint8(5), uint8(64), uint8(9), true, true)
	f.Fuzz(func(t *testing.T, seed uint64, m, k, n uint8, acc, nn bool) {
		r := rand.New(rand.NewPCG(seed, 17))
		mm, kk, nn2 := 1+int(m)%130, 1+int(k)%130, 1+int(n)%130
		g := 0
		if nn {
			g = 1
		}
		eachImpl(t, func(t *testing.T) { testGemmBF16Case(t, r, g, mm, kk, nn2, acc) })
	})
}

// BenchmarkGemmBF16NT runs the batch-1 products of a 110M-parameter model
// (d 768, FFN 2048, vocab 32000) and reports the weight bytes streamed.
// Each single shape fits in the last-level cache after the first run; the
// token110M case runs one token's worth of products (12 layers of q, k, v,
// o, gate, up, down, then the vocabulary), 208 MB of distinct weights in
// huge pages, which is what sampling sees.
func BenchmarkGemmBF16NT(b *testing.B) {
	for _, s := range [][2]int{{768, 768}, {768, 2048}, {2048, 768}, {768, 32000}} {
		k, n := s[0], s[1]
		b.Run(fmt.Sprintf("m1_k%d_n%d", k, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			x := make([]float32, k)
			randFill(r, x)
			w := HugeBF16(k * n)
			defer FreeHuge(w)
			randBF16(r, w)
			out := make([]float32, n)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				GemmBF16NT(out, x, w, 1, k, n, false)
			}
			sec := time.Since(start).Seconds()
			b.ReportMetric(float64(2*k*n)*float64(b.N)/sec/1e9, "GB/s")
		})
	}
	b.Run("token110M", func(b *testing.B) {
		type mat struct {
			w    []BF16
			k, n int
		}
		var mats []mat
		bytes := 0
		r := rand.New(rand.NewPCG(1, 2))
		add := func(k, n int) {
			w := HugeBF16(k * n)
			randBF16(r, w)
			mats = append(mats, mat{w, k, n})
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
		x := make([]float32, 2048)
		randFill(r, x)
		out := make([]float32, 32000)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			for _, m := range mats {
				GemmBF16NT(out, x, m.w, 1, m.k, m.n, false)
			}
		}
		sec := time.Since(start).Seconds()
		b.ReportMetric(float64(bytes)*float64(b.N)/sec/1e9, "GB/s")
		b.ReportMetric(float64(b.N)/sec, "tokens/s")
	})
}

// TestDotTilesRowBits checks the RowInvariantRows contract (3×4 and 1×8
// tiles give a row the same bits): every row of an NT product with up to
// RowInvariantRows rows equals that row computed alone, for both bf16 and
// float32 B. Past the limit, each row must still match the same row of any
// other product that large (the packed path is row-invariant on its own).
func TestDotTilesRowBits(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		for _, s := range [][3]int{{5, 77, 19}, {7, 256, 40}, {RowInvariantRows, 9, 8}, {RowInvariantRows, 300, 33}} {
			m, k, n := s[0], s[1], s[2]
			a := make([]float32, m*k)
			randFill(r, a)
			bh := make([]BF16, k*n)
			randBF16(r, bh)
			bf := make([]float32, k*n)
			randFill(r, bf)
			all := make([]float32, m*n)
			one := make([]float32, n)
			for _, half := range []bool{true, false} {
				if half {
					GemmBF16NT(all, a, bh, m, k, n, false)
				} else {
					Gemm(NT, all, a, bf, m, k, n, false)
				}
				for i := range m {
					if half {
						GemmBF16NT(one, a[i*k:(i+1)*k], bh, 1, k, n, false)
					} else {
						Gemm(NT, one, a[i*k:(i+1)*k], bf, 1, k, n, false)
					}
					for j := range one {
						if math.Float32bits(one[j]) != math.Float32bits(all[i*n+j]) {
							t.Fatalf("bf16=%v m=%d k=%d n=%d: row %d col %d = %v alone, %v in the batch", half, m, k, n, i, j, one[j], all[i*n+j])
						}
					}
				}
			}
		}
		// Large products: rows of an m = 40 product equal the same rows of
		// an m = 100 one, at offset 31 so that the tiles fall differently.
		k, n := 300, 50
		a := make([]float32, 100*k)
		randFill(r, a)
		bh := make([]BF16, k*n)
		randBF16(r, bh)
		bf := make([]float32, k*n)
		randFill(r, bf)
		big, small := make([]float32, 100*n), make([]float32, 40*n)
		for _, half := range []bool{true, false} {
			if half {
				GemmBF16NT(big, a, bh, 100, k, n, false)
				GemmBF16NT(small, a[31*k:71*k], bh, 40, k, n, false)
			} else {
				Gemm(NT, big, a, bf, 100, k, n, false)
				Gemm(NT, small, a[31*k:71*k], bf, 40, k, n, false)
			}
			for i, v := range small {
				if math.Float32bits(v) != math.Float32bits(big[31*n+i]) {
					t.Fatalf("bf16=%v: row %d of a 40-row product differs from the same row in a 100-row one", half, i/n)
				}
			}
		}
	})
}
