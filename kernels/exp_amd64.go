package kernels

// expSubAVX2 replaces x[i] by e^(x[i]-sub) for len(x) a multiple of 8 and
// returns their sum, in the operations of the Go twin:
//
//	var l [8]float32
//	for i := range x {
//		x[i] = exp8(x[i] - sub)
//		l[i%8] += x[i]
//	}
//	return hsum8(&l)
//
//go:noescape
func expSubAVX2(x []float32, sub float32) float32

// sigmoidAVX2 sets out[i] = 1/(1+exp8(0-x[i])) for len(out) a multiple of
// 8 (len(x) ≥ len(out)).
//
//go:noescape
func sigmoidAVX2(out, x []float32)

// siluMulAVX2 sets out[i] = (g[i]·(1/(1+exp8(0-g[i]))))·u[i] for len(out)
// a multiple of 8 (len(g), len(u) ≥ len(out)).
//
//go:noescape
func siluMulAVX2(out, g, u []float32)

func expSub(x []float32, sub float32) float32 {
	n8 := len(x) &^ 7
	if useAVX512 && n8 >= expSub512Min {
		s := expSubAVX512(x[:n8], sub)
		if n8 < len(x) {
			// The tail's e^ in one masked block, then its sum in order,
			// as expSubGo adds it.
			expAVX512(x[n8:], sub)
			for _, e := range x[n8:] {
				s += e
			}
		}
		return s
	}
	if !useAsm || n8 == 0 {
		return expSubGo(x, sub)
	}
	s := expSubAVX2(x[:n8], sub)
	for i := n8; i < len(x); i++ {
		e := exp8(x[i] - sub)
		x[i] = e
		s += e
	}
	return s
}

// expSub512Min is the shortest row expSub hands to the AVX-512 kernels.
// On attention's rows of up to a few hundred scores the AVX2 kernel was
// as fast or faster (bench-small's forward attention, 1 thread: 2.9 ms
// with AVX2, 3.06 ms with AVX-512, 3.5 ms with the AVX2 kernel and an
// AVX-512 tail); a cross-entropy row over a vocabulary is longer.
const expSub512Min = 256

// vecSplit returns how many leading elements of n the AVX-512 kernels
// take (a multiple of 16) and how many the AVX2 and AVX-512 kernels
// together take (a multiple of 8), as the CPU allows; the Go twins do the
// rest.
func vecSplit(n int) (n16, n8 int) {
	if useAVX512 {
		n16 = n &^ 15
	}
	if useAsm {
		n8 = n &^ 7
	}
	return n16, n8
}

func sigmoid32(out, x []float32) {
	n16, n8 := vecSplit(len(out))
	if n16 > 0 {
		sigmoidAVX512(out[:n16], x[:n16])
	}
	if n8 > n16 {
		sigmoidAVX2(out[n16:n8], x[n16:n8])
	}
	sigmoidGo(out[n8:], x[n8:len(out)])
}

func siluMul(out, g, u []float32) {
	n16, n8 := vecSplit(len(out))
	if n16 > 0 {
		siluMulAVX512(out[:n16], g[:n16], u[:n16])
	}
	if n8 > n16 {
		siluMulAVX2(out[n16:n8], g[n16:n8], u[n16:n8])
	}
	siluMulGo(out[n8:], g[n8:len(out)], u[n8:len(out)])
}

// attnDSAVX2 is attnDSGo for len(s) a multiple of 8 (len(dp) ≥ len(s)):
//
//	for i := range s {
//		p := exp8(s[i]*scale - l)
//		s[i], dp[i] = p, (p*(dp[i]-d))*scale
//	}
//
//go:noescape
func attnDSAVX2(s, dp []float32, scale, l, d float32)

func attnDS(s, dp []float32, scale, l, d float32) {
	if useAVX512 {
		attnDSAVX512(s, dp[:len(s)], scale, l, d)
		return
	}
	n8 := asm8(len(s))
	if n8 > 0 {
		attnDSAVX2(s[:n8], dp[:n8], scale, l, d)
	}
	attnDSGo(s[n8:], dp[n8:len(s)], scale, l, d)
}

// scaleMaxAVX2 multiplies x (len(x) a multiple of 8) by s in place and
// returns the maximum as scaleMaxGo computes it:
//
//	l := [8]float32{-Inf, ...}
//	for i := range x {
//		x[i] *= s
//		l[i%8] = maxOf(l[i%8], x[i])
//	}
//	return hmax8(&l)
//
//go:noescape
func scaleMaxAVX2(x []float32, s float32) float32

func scaleMax(x []float32, s float32) float32 {
	n8 := len(x) &^ 7
	if !useAsm || n8 == 0 {
		return scaleMaxGo(x, s)
	}
	m := scaleMaxAVX2(x[:n8], s)
	for i := n8; i < len(x); i++ {
		v := x[i] * s
		x[i] = v
		m = maxOf(m, v)
	}
	return m
}

// swigluBackAVX2 is swigluBackGo for len(dg) a multiple of 8, with the same
// float32 operations in the same order (no fused multiply-adds): the same
// bits.
//
//go:noescape
func swigluBackAVX2(dg, du, d, g, u, s []float32)

func swigluBack(dg, du, d, g, u, s []float32) {
	n8 := len(dg) &^ 7
	if useAsm && n8 > 0 {
		swigluBackAVX2(dg[:n8], du[:n8], d[:n8], g[:n8], u[:n8], s[:n8])
	}
	if !useAsm {
		n8 = 0
	}
	swigluBackGo(dg[n8:], du[n8:len(dg)], d[n8:len(dg)], g[n8:len(dg)], u[n8:len(dg)], s[n8:len(dg)])
}

// ropeRowAVX2 is ropeRowGo for one row of float32 heads, half a multiple
// of 8: the same operations in the same order, so the same bits.
//
//go:noescape
func ropeRowAVX2(out, x, cs, sn *float32, half, heads int, add bool)

func ropeRow(out, x, cs, sn []float32, half, heads int, add bool) {
	if !useAsm || half%8 != 0 || heads == 0 {
		ropeRowGo(out, x, cs, sn, half, heads, add)
		return
	}
	_, _ = out[heads*2*half-1], x[heads*2*half-1]
	_, _ = cs[half-1], sn[half-1]
	ropeRowAVX2(&out[0], &x[0], &cs[0], &sn[0], half, heads, add)
}

// softExpAVX2 is decode attention's softExp in one kernel, for len(x) a
// positive multiple of 8: scaleMaxAVX2's pass, then expSubAVX2's with the
// maximum as sub, in registers between them:
//
//	m := scaleMaxAVX2(x, scale)
//	return expSubAVX2(x, m)
//
//go:noescape
func softExpAVX2(x []float32, scale float32) float32

// softExpAsm runs the one-kernel softExp on x (len(x) a positive
// multiple of 8): 16-lane exps on the rows expSub gives them, so the
// bits are those of expSub(x, scaleMax(x, scale)).
func softExpAsm(x []float32, scale float32) float32 {
	if useAVX512 && len(x) >= expSub512Min {
		return softExpAVX512(x, scale)
	}
	return softExpAVX2(x, scale)
}
