package kernels

import (
	"math"
	"testing"
)

// TestOpExp32 bounds the vector kernels' float32 exponential (exp8, bit for
// bit what the assembly computes) against math.Exp:
// ≤ 3e-7 relative (about 2.5 float32 ulps) on normal results, which keeps
// attention and SwiGLU well inside the 1e-5 float32-vs-float64 bound.
func TestOpExp32(t *testing.T) {
	worst := 0.0
	for x := -87.0; x <= 88.7; x += 0.000731 {
		got := float64(exp8(float32(x)))
		want := math.Exp(float64(float32(x)))
		worst = max(worst, math.Abs(got-want)/want)
	}
	if worst > 3e-7 {
		t.Errorf("exp8 worst relative error %.3g > 3e-7", worst)
	}
	for _, c := range []struct{ in, want float32 }{{0, 1}, {-200, 0}, {100, float32(math.Inf(1))}, {float32(math.Inf(-1)), 0}} {
		if got := exp8(c.in); got != c.want {
			t.Errorf("exp8(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if v := exp8(float32(math.NaN())); v == v {
		t.Error("exp8(NaN) is not NaN")
	}
	// Subnormal results keep few bits: allow one step of 2^-149.
	if v, w := exp8(-100), float32(math.Exp(-100)); math.Abs(float64(v-w)) > 1.5e-45 {
		t.Errorf("exp8(-100) = %g (subnormal), want %g", v, w)
	}
}

// TestOpSoftmax32 compares the vectorised float32 softmax with the float64
// one on rows whose spread reaches the underflow range. Rounding
// scale·x to float32 moves each exponent by up to 6e-8·|scale·x|, so a
// probability is good to about 1e-7·(1 + |scale·x|) relative (those below
// 1e-5 are compared absolutely).
func TestOpSoftmax32(t *testing.T) {
	for _, spread := range []float64{1, 30, 300} {
		row := make([]float32, 97)
		ref := make([]float64, len(row))
		for i := range row {
			row[i] = float32(spread * math.Sin(float64(i*i)))
			ref[i] = float64(row[i])
		}
		l32 := opSoftmax32(row, 0.7)
		l64 := opSoftmax(ref, 0.7)
		if math.Abs(l32-l64) > 1e-5*math.Max(1, math.Abs(l64)) {
			t.Errorf("spread %v: log-sum-exp %v, want %v", spread, l32, l64)
		}
		for i := range row {
			if math.Abs(float64(row[i])-ref[i]) > 1e-7*(1+0.7*spread)*math.Max(ref[i], 1e-5) {
				t.Fatalf("spread %v: p[%d] = %v, want %v", spread, i, row[i], ref[i])
			}
		}
	}
}
