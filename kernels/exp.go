package kernels

import "math"

// Vectorised e^x for softmax rows and SwiGLU, 8 lanes at a time on amd64
// (exp_amd64.s) with a pure-Go twin (exp8) that performs the very same
// float32 operations in the same order, so both give bit-identical
// results: the twin is the fallback and the assembly's exact reference.
//
// Method: clamp x to [expLo, expHi]; n = round(x·log2 e) by the 1.5·2^23
// shifter; r = x - n·ln2 (ln2 split in two so n·ln2hi is exact), |r| ≤
// ln2/2; e^r by its degree-7 Taylor polynomial (truncation error < 3e-9;
// Estrin's scheme, so the products do not all wait on each other); then scale
// by 2^n in two steps 2^(n>>1)·2^(n-(n>>1)), each a normal float, so
// results down to the subnormal range round once and correctly. Beyond
// the clamps the result is +Inf or 0; NaN stays NaN. Relative error
// ≤ 4e-7 over the normal range (tested against math.Exp).

const (
	expHi      = float32(88.72283)
	expLo      = float32(-103.97)
	expLog2e   = float32(1.442695040888963)
	expShifter = float32(12582912) // 1.5·2^23
	expLn2Hi   = float32(0.693145751953125)
	expLn2Lo   = float32(1.428606765330187e-06)
	expC3      = float32(1.0 / 6)
	expC4      = float32(1.0 / 24)
	expC5      = float32(1.0 / 120)
	expC6      = float32(1.0 / 720)
	expC7      = float32(1.0 / 5040)
)

// exp8 is one lane of the vector kernels' e^x. The explicit float32
// conversions keep the compiler from fusing a product and a sum into one
// FMA, which the assembly does not use.
func exp8(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > expHi:
		return float32(math.Inf(1))
	case x < expLo:
		return 0
	}
	n := float32(x*expLog2e) + expShifter
	n -= expShifter
	r := x - float32(n*expLn2Hi)
	r -= float32(n * expLn2Lo)
	r2 := float32(r * r)
	a := (1 + r) + float32(r2*(0.5+float32(r*expC3)))
	c := (expC4 + float32(r*expC5)) + float32(r2*(expC6+float32(r*expC7)))
	p := a + float32(float32(r2*r2)*c)
	ni := int32(n)
	n1 := ni >> 1
	return float32(p*pow2(n1)) * pow2(ni-n1)
}

// pow2 is 2^k for a normal exponent k.
func pow2(k int32) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// hsum8 adds 8 lane sums in the order the assembly reduces a register:
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
func hsum8(l *[8]float32) float32 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// expSubGo replaces x[i] by e^(x[i]-sub) and returns their sum: the first
// len(x)&^7 in 8 lane sums reduced by hsum8, the rest added in order.
func expSubGo(x []float32, sub float32) float32 {
	n8 := len(x) &^ 7
	var l [8]float32
	for i := 0; i < n8; i += 8 {
		for j := range l {
			e := exp8(x[i+j] - sub)
			x[i+j] = e
			l[j] += e
		}
	}
	s := hsum8(&l)
	for i := n8; i < len(x); i++ {
		e := exp8(x[i] - sub)
		x[i] = e
		s += e
	}
	return s
}

// attnDSGo turns one row of attention scores into probabilities and
// their gradient: p = e^(s·scale − l) (l the row's log-sum-exp) replaces
// s, and dp becomes (p·(dp − d))·scale, the gradient of the unscaled
// scores (d = rowsum(dout·out) of the row).
func attnDSGo(s, dp []float32, scale, l, d float32) {
	dp = dp[:len(s)]
	for i, v := range s {
		p := exp8(float32(v*scale) - l)
		s[i] = p
		dp[i] = float32(p*float32(dp[i]-d)) * scale
	}
}

// sigmoidGo sets out[i] = 1/(1+e^(0-x[i])).
func sigmoidGo(out, x []float32) {
	x = x[:len(out)]
	for i, v := range x {
		out[i] = 1 / (1 + exp8(0-v))
	}
}

// siluMulGo sets out[i] = g[i]·sigmoid(g[i])·u[i] (SwiGLU's forward).
func siluMulGo(out, g, u []float32) {
	g, u = g[:len(out)], u[:len(out)]
	for i, v := range g {
		out[i] = float32(v*(1/(1+exp8(0-v)))) * u[i]
	}
}

// ExpSub replaces x[i] by e^(x[i]-sub) and returns their float32 sum (the
// softmax numerators and denominator after a max shift).
func ExpSub(x []float32, sub float32) float32 { return expSub(x, sub) }

// Sigmoid sets out[i] = 1/(1+e^-x[i]). It panics if the lengths differ.
func Sigmoid(out, x []float32) {
	sameLen("Sigmoid", len(out), len(x))
	sigmoid32(out, x)
}

// SiLUMul sets out[i] = g[i]·sigmoid(g[i])·u[i]. out may be g or u. It
// panics if the lengths differ.
func SiLUMul(out, g, u []float32) {
	sameLen("SiLUMul", len(out), len(g))
	sameLen("SiLUMul", len(out), len(u))
	siluMul(out, g, u)
}

// maxOf is the larger of a and b as the assembly's VMAXPS computes it with
// a as its first source: a if a > b, else b (so b when either is NaN).
func maxOf(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// scaleMaxGo multiplies x by s in place and returns the largest product:
// 8 lane maxima over the first len(x)&^7 elements, reduced as the
// assembly does, then the rest in order. NaNs may be skipped; the empty
// slice gives -Inf.
func scaleMaxGo(x []float32, s float32) float32 {
	n8 := len(x) &^ 7
	neg := float32(math.Inf(-1))
	l := [8]float32{neg, neg, neg, neg, neg, neg, neg, neg}
	for i := 0; i < n8; i += 8 {
		for j := range l {
			v := x[i+j] * s
			x[i+j] = v
			l[j] = maxOf(l[j], v)
		}
	}
	m := hmax8(&l)
	for i := n8; i < len(x); i++ {
		v := x[i] * s
		x[i] = v
		m = maxOf(m, v)
	}
	return m
}

// hmax8 reduces 8 lane maxima in the assembly's order (that of hsum8).
func hmax8(l *[8]float32) float32 {
	c0, c1, c2, c3 := maxOf(l[0], l[4]), maxOf(l[1], l[5]), maxOf(l[2], l[6]), maxOf(l[3], l[7])
	return maxOf(maxOf(c0, c2), maxOf(c1, c3))
}

// ScaleMax multiplies x by s in place and returns the largest element
// (a softmax row's scaling and its max shift).
func ScaleMax(x []float32, s float32) float32 { return scaleMax(x, s) }
