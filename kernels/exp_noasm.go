//go:build !amd64

package kernels

func expSub(x []float32, sub float32) float32     { return expSubGo(x, sub) }
func sigmoid32(out, x []float32)                  { sigmoidGo(out, x) }
func siluMul(out, g, u []float32)                 { siluMulGo(out, g, u) }
func scaleMax(x []float32, s float32) float32     { return scaleMaxGo(x, s) }
func attnDS(s, dp []float32, scale, l, d float32) { attnDSGo(s, dp, scale, l, d) }

func swigluBack(dg, du, d, g, u, s []float32) { swigluBackGo(dg, du, d, g, u, s) }

func ropeRow(out, x, cs, sn []float32, half, heads int, add bool) {
	ropeRowGo(out, x, cs, sn, half, heads, add)
}
