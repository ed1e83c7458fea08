package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expRelTol bounds exp8's relative error on normal results: the
// polynomial's truncation (3e-9) plus about a dozen float32 roundings of
// ≤ 2⁻²⁴ each.
const expRelTol = 4e-7

func checkExpValue(t *testing.T, x, got float32) {
	t.Helper()
	switch {
	case x != x:
		if got == got {
			t.Fatalf("exp8(NaN) = %v", got)
		}
		return
	case x > expHi:
		if !math.IsInf(float64(got), 1) {
			t.Fatalf("exp8(%v) = %v, want +Inf", x, got)
		}
		return
	case x < expLo:
		if got != 0 {
			t.Fatalf("exp8(%v) = %v, want 0", x, got)
		}
		return
	}
	want := math.Exp(float64(x))
	// Subnormal results keep fewer bits: allow half an ulp of the
	// smallest normal's spacing beyond the relative bound.
	tol := expRelTol*want + math.Ldexp(1, -149)
	if want > math.MaxFloat32 {
		if !math.IsInf(float64(got), 1) && math.Abs(float64(got)-want) > tol {
			t.Fatalf("exp8(%v) = %v, want %v or +Inf", x, got, want)
		}
		return
	}
	if !(math.Abs(float64(got)-want) <= tol) {
		t.Fatalf("exp8(%v) = %v, want %v (rel err %.3g)", x, got, want, math.Abs(float64(got)-want)/want)
	}
}

// TestExp8AgainstMathExp sweeps the whole float32 range that matters,
// the clamps and special values.
func TestExp8AgainstMathExp(t *testing.T) {
	for x := float32(-110); x < 90; x += 0.0137 {
		checkExpValue(t, x, exp8(x))
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, expHi, expLo,
		math.Nextafter32(expHi, 100), math.Nextafter32(expLo, -200), 88.3762, 88.7, -87.3365, -100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32} {
		checkExpValue(t, x, exp8(x))
	}
}

// expInputs fills x with values of softmax and SwiGLU scale, with special
// values mixed in at random places.
func expInputs(r *rand.Rand, x []float32) {
	specials := []float32{0, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 95, -95, -120, 120, expHi, expLo}
	for i := range x {
		if r.IntN(16) == 0 {
			x[i] = specials[r.IntN(len(specials))]
		} else {
			x[i] = 40 * (2*r.Float32() - 1)
		}
	}
}

func sameBits32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// testExpKernels checks ExpSub, Sigmoid and SiLUMul on n elements: bit for
// bit against their Go twins (whichever implementation runs), against
// float64 references, and that nothing outside the outputs is written.
func testExpKernels(t *testing.T, r *rand.Rand, n int) {
	guard := math.Float32frombits(guardBits)
	x, xw := padded(n, guard)
	expInputs(r, x)
	// ExpSub, after a max shift as softmax does it (finite inputs only).
	row := make([]float32, n)
	mx := float32(math.Inf(-1))
	for i := range row {
		row[i] = 30 * (2*r.Float32() - 1)
		mx = max(mx, row[i])
	}
	y, yw := padded(n, guard)
	copy(y, row)
	twin := append([]float32(nil), row...)
	sum := ExpSub(y, mx)
	wantSum := expSubGo(twin, mx)
	checkGuards(t, yw, n, "ExpSub x")
	if !sameBits32(sum, wantSum) {
		t.Fatalf("ExpSub n=%d: sum %v, Go twin %v", n, sum, wantSum)
	}
	var ref, abs float64
	for i := range y {
		if !sameBits32(y[i], twin[i]) {
			t.Fatalf("ExpSub n=%d: x[%d] = %v, Go twin %v", n, i, y[i], twin[i])
		}
		e := math.Exp(float64(row[i] - mx))
		if math.Abs(float64(y[i])-e) > expRelTol*e+1e-38 {
			t.Fatalf("ExpSub n=%d: x[%d] = %v, want %v", n, i, y[i], e)
		}
		ref += e
		abs += e
	}
	if tol := reductionTolerance(n, abs) + expRelTol*abs; !(math.Abs(float64(sum)-ref) <= tol) {
		t.Fatalf("ExpSub n=%d: sum %v, want %v", n, sum, ref)
	}

	// ScaleMax: the products bit for bit (one rounding each), the max
	// against its Go twin and against the true max of the products.
	sx, sxw := padded(n, guard)
	for i := range sx {
		sx[i] = 50 * (2*r.Float32() - 1)
	}
	sc := 4*r.Float32() - 2
	stwin := append([]float32(nil), sx...)
	want := float32(math.Inf(-1))
	for _, v := range sx {
		want = max(want, v*sc)
	}
	m := ScaleMax(sx, sc)
	mt := scaleMaxGo(stwin, sc)
	checkGuards(t, sxw, n, "ScaleMax x")
	if !sameBits32(m, mt) || m != want {
		t.Fatalf("ScaleMax n=%d: max %v, Go twin %v, want %v", n, m, mt, want)
	}
	for i := range sx {
		if !sameBits32(sx[i], stwin[i]) {
			t.Fatalf("ScaleMax n=%d: x[%d] = %v, Go twin %v", n, i, sx[i], stwin[i])
		}
	}

	// Sigmoid and SiLUMul, with special values.
	u, uw := guardedInput(r, n)
	for _, alias := range []bool{false, true} {
		out, ow := padded(n, guard)
		Sigmoid(out, x)
		checkGuards(t, ow, n, "Sigmoid out")
		twin := make([]float32, n)
		sigmoidGo(twin, x)
		for i := range out {
			if !sameBits32(out[i], twin[i]) {
				t.Fatalf("Sigmoid n=%d: out[%d] = %v for %v, Go twin %v", n, i, out[i], x[i], twin[i])
			}
			if x[i] == x[i] {
				want := 1 / (1 + math.Exp(-float64(x[i])))
				if math.Abs(float64(out[i])-want) > 1e-6*want+1e-38 {
					t.Fatalf("Sigmoid n=%d: out[%d] = %v for %v, want %v", n, i, out[i], x[i], want)
				}
			}
		}
		g := append([]float32(nil), x...)
		dst := out
		if alias {
			dst = g
		}
		SiLUMul(dst, g, u)
		if !alias {
			checkGuards(t, ow, n, "SiLUMul out")
		}
		twin = make([]float32, n)
		siluMulGo(twin, x, u)
		for i := range dst {
			if !sameBits32(dst[i], twin[i]) {
				t.Fatalf("SiLUMul n=%d alias=%v: out[%d] = %v, Go twin %v", n, alias, i, dst[i], twin[i])
			}
			if xi := float64(x[i]); xi == xi && !math.IsInf(xi, 0) {
				want := xi / (1 + math.Exp(-xi)) * float64(u[i])
				if math.Abs(float64(dst[i])-want) > 1e-6*math.Abs(want)+1e-37 {
					t.Fatalf("SiLUMul n=%d: out[%d] = %v for g=%v u=%v, want %v", n, i, dst[i], x[i], u[i], want)
				}
			}
		}
	}
	checkGuards(t, xw, n, "input x")
	checkGuards(t, uw, n, "input u")
}

func TestExpKernels(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range vecSizes() {
			testExpKernels(t, r, n)
		}
	})
}

func TestExpKernelLengthMismatchPanics(t *testing.T) {
	for name, fn := range map[string]func(){
		"Sigmoid": func() { Sigmoid(make([]float32, 3), make([]float32, 4)) },
		"SiLUMul": func() { SiLUMul(make([]float32, 3), make([]float32, 3), make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with mismatched lengths did not panic", name)
				}
			}()
			fn()
		}()
	}
}

func FuzzExpKernels(f *testing.F) { fuzzVec(f, testExpKernels) }

func BenchmarkExpSub(b *testing.B) {
	benchVec(b, 8, func(x, _, z []float32) {
		copy(z, x)
		vecSink += ExpSub(z, 1)
	})
}

func BenchmarkSiLUMul(b *testing.B) {
	benchVec(b, 12, func(x, y, z []float32) { SiLUMul(z, x, y) })
}

// TestSwigluBackMatchesTwin: the assembly SwiGLU gradient does the Go
// twin's float32 operations in its order, so the two agree bit for bit,
// at every length 0…130, and write nothing outside dg and du.
func TestSwigluBackMatchesTwin(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 3))
		for n := 0; n <= 130; n++ {
			d, _ := guardedInput(r, n)
			g, _ := guardedInput(r, n)
			u, _ := guardedInput(r, n)
			s := make([]float32, n)
			sigmoid32(s, g)
			dg, dgw := guardedInput(r, n)
			du, duw := guardedInput(r, n)
			wantG, wantU := append([]float32(nil), dg...), append([]float32(nil), du...)
			swigluBackGo(wantG, wantU, d, g, u, s)
			swigluBack(dg, du, d, g, u, s)
			checkGuards(t, dgw, n, "swigluBack dg")
			checkGuards(t, duw, n, "swigluBack du")
			for i := range dg {
				if math.Float32bits(dg[i]) != math.Float32bits(wantG[i]) || math.Float32bits(du[i]) != math.Float32bits(wantU[i]) {
					t.Fatalf("n=%d: element %d: dg %v du %v, twin %v %v", n, i, dg[i], du[i], wantG[i], wantU[i])
				}
			}
		}
	})
}

// TestRopeRowMatchesTwin: the assembly rotation of a row's heads matches
// the Go twin bit for bit, stored, added and in place, and writes nothing
// outside the row.
func TestRopeRowMatchesTwin(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 8))
		for _, half := range []int{1, 3, 8, 16, 32, 64} {
			for _, heads := range []int{1, 2, 5} {
				n := heads * 2 * half
				cs, _ := guardedInput(r, half)
				sn, _ := guardedInput(r, half)
				x, _ := guardedInput(r, n)
				for _, add := range []bool{false, true} {
					out, ow := guardedInput(r, n)
					want := append([]float32(nil), out...)
					ropeRowGo(want, x, cs, sn, half, heads, add)
					ropeRow(out, x, cs, sn, half, heads, add)
					checkGuards(t, ow, n, "ropeRow out")
					for i := range out {
						if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
							t.Fatalf("half=%d heads=%d add=%v: out[%d] = %v, twin %v", half, heads, add, i, out[i], want[i])
						}
					}
				}
				in := append([]float32(nil), x...)
				want := append([]float32(nil), x...)
				ropeRowGo(want, append([]float32(nil), x...), cs, sn, half, heads, false)
				ropeRow(in, in, cs, sn, half, heads, false)
				for i := range in {
					if math.Float32bits(in[i]) != math.Float32bits(want[i]) {
						t.Fatalf("half=%d heads=%d in place: x[%d] = %v, twin %v", half, heads, i, in[i], want[i])
					}
				}
			}
		}
	})
}

// testAttnDS checks attention's fused probabilities and score gradient on
// n elements: bit for bit against its Go twin and against the separate
// passes AttentionBackward made before (scale, ExpSub, the gradient loop),
// against float64, and that nothing outside s and dp is written.
func testAttnDS(t *testing.T, r *rand.Rand, n int) {
	guard := math.Float32frombits(guardBits)
	s, sw := padded(n, guard)
	dp, dw := padded(n, guard)
	for i := range s {
		s[i] = 20 * (2*r.Float32() - 1)
		dp[i] = 2*r.Float32() - 1
	}
	scale := 0.1 + r.Float32()
	l := 10 * r.Float32() // a row's log-sum-exp is at least its max
	d := 2*r.Float32() - 1
	s0, dp0 := append([]float32(nil), s...), append([]float32(nil), dp...)
	ts, tdp := append([]float32(nil), s...), append([]float32(nil), dp...)
	attnDS(s, dp, scale, l, d)
	attnDSGo(ts, tdp, scale, l, d)
	checkGuards(t, sw, n, "attnDS s")
	checkGuards(t, dw, n, "attnDS dp")
	// The passes as AttentionBackward wrote them.
	ps, pdp := append([]float32(nil), s0...), append([]float32(nil), dp0...)
	for e := range ps {
		ps[e] *= scale
	}
	expSubGo(ps, l)
	for e, p := range ps {
		pdp[e] = p * (pdp[e] - d) * scale
	}
	for i := range s {
		if !sameBits32(s[i], ts[i]) || !sameBits32(dp[i], tdp[i]) {
			t.Fatalf("attnDS n=%d: element %d: p %v dS %v, Go twin %v %v", n, i, s[i], dp[i], ts[i], tdp[i])
		}
		if !sameBits32(s[i], ps[i]) || !sameBits32(dp[i], pdp[i]) {
			t.Fatalf("attnDS n=%d: element %d: p %v dS %v, separate passes %v %v", n, i, s[i], dp[i], ps[i], pdp[i])
		}
		x := float64(s0[i]) * float64(scale)
		p := math.Exp(x - float64(l))
		g := p * (float64(dp0[i]) - float64(d)) * float64(scale)
		// Rounding s·scale and then s·scale − l errs by half an ulp of
		// each, which e^ turns into relative errors of that size.
		rel := expRelTol + 0x1p-24*(math.Abs(x)+math.Abs(x-float64(l))) + 1e-7
		if math.Abs(float64(s[i])-p) > rel*p+1e-38 || math.Abs(float64(dp[i])-g) > rel*p*(2+2*math.Abs(float64(dp0[i])-float64(d)))+1e-38 {
			t.Fatalf("attnDS n=%d: element %d: p %v dS %v, float64 %v %v", n, i, s[i], dp[i], p, g)
		}
	}
}

func TestAttnDS(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(12, 5))
		for _, n := range vecSizes() {
			testAttnDS(t, r, n)
		}
	})
}

func FuzzAttnDS(f *testing.F) { fuzzVec(f, testAttnDS) }
