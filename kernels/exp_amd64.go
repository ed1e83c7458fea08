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

func sigmoid32(out, x []float32) {
	n8 := len(out) &^ 7
	if useAsm && n8 > 0 {
		sigmoidAVX2(out[:n8], x[:n8])
	}
	if !useAsm {
		n8 = 0
	}
	sigmoidGo(out[n8:], x[n8:len(out)])
}

func siluMul(out, g, u []float32) {
	n8 := len(out) &^ 7
	if useAsm && n8 > 0 {
		siluMulAVX2(out[:n8], g[:n8], u[:n8])
	}
	if !useAsm {
		n8 = 0
	}
	siluMulGo(out[n8:], g[n8:len(out)], u[n8:len(out)])
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
