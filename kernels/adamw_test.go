package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testAdamW checks the float32 AdamW update on n elements: bit for bit
// against its Go twin and against the generic loop run in float32, the
// moments against float64, and that nothing outside p, m and v is
// written (the inputs are NaN-guarded).
func testAdamW(t *testing.T, r *rand.Rand, n int) {
	guard := math.Float32frombits(guardBits)
	g, gw := guardedInput(r, n)
	k := &adamwK{gsc: 0.5 + r.Float32(), b1: 0.9, ob1: 1 - float32(0.9), b2: 0.95, ob2: 1 - float32(0.95),
		c1: 1 + r.Float32(), c2: 1 + 10*r.Float32(), lr: 1e-2, eps: 1e-8, decay: 1 - 1e-3}
	p, pw := padded(n, guard)
	m, mw := padded(n, guard)
	v, vw := padded(n, guard)
	randFill(r, p)
	randFill(r, m)
	for i := range v {
		v[i] = r.Float32() // a second moment is never negative
	}
	if n > 3 {
		v[n/2] = 0 // a zero moment with a zero gradient: ε alone below
		g[n/2] = 0
	}
	p0, m0, v0 := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
	tp, tm, tv := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
	gp, gm, gv := append([]float32(nil), p...), append([]float32(nil), m...), append([]float32(nil), v...)
	adamw(p, g, m, v, k)
	adamwGo(tp, g, tm, tv, k)
	adamwGeneric(gp, g, gm, gv, k.b1, k.b2, k.c1, k.c2, k.lr, k.eps, k.decay, k.gsc)
	checkGuards(t, pw, n, "adamw p")
	checkGuards(t, mw, n, "adamw m")
	checkGuards(t, vw, n, "adamw v")
	checkGuards(t, gw, n, "adamw g")
	for i := range p {
		for _, c := range []struct {
			name           string
			got, twin, gen float32
		}{{"p", p[i], tp[i], gp[i]}, {"m", m[i], tm[i], gm[i]}, {"v", v[i], tv[i], gv[i]}} {
			if !sameBits32(c.got, c.twin) || !sameBits32(c.got, c.gen) {
				t.Fatalf("n=%d: %s[%d] = %v, Go twin %v, generic loop %v", n, c.name, i, c.got, c.twin, c.gen)
			}
		}
		gi := float64(g[i]) * float64(k.gsc)
		wm := float64(k.b1)*float64(m0[i]) + float64(k.ob1)*gi
		wv := float64(k.b2)*float64(v0[i]) + float64(k.ob2)*gi*gi
		wp := float64(p0[i])*float64(k.decay) - float64(k.lr)*wm*float64(k.c1)/(math.Sqrt(wv*float64(k.c2))+float64(k.eps))
		if math.Abs(float64(m[i])-wm) > 1e-6*(1+math.Abs(wm)) || math.Abs(float64(v[i])-wv) > 1e-6*(1+wv) {
			t.Fatalf("n=%d: m[%d], v[%d] = %v, %v; float64 %v, %v", n, i, i, m[i], v[i], wm, wv)
		}
		if math.Abs(float64(p[i])-wp) > 1e-6*(1+math.Abs(wp)) {
			t.Fatalf("n=%d: p[%d] = %v, float64 %v", n, i, p[i], wp)
		}
	}
}

func TestAdamWKernel(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(8, 15))
		for _, n := range vecSizes() {
			testAdamW(t, r, n)
		}
	})
}

func FuzzAdamWKernel(f *testing.F) { fuzzVec(f, testAdamW) }
