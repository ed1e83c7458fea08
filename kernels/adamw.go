package kernels

import "math"

// AdamW's update in float32, vectorised on amd64 (adamw_amd64.s) with a
// pure-Go twin here doing the very same operations in the same order:
// the generic loop of AdamWUpdate computed in float32, bit for bit (a
// float32 square root is correctly rounded, as is float64's rounded to
// float32, so VSQRTPS gives the bits of T(math.Sqrt(float64(x)))).

// adamwK holds one update's constants: the gradient scale, β1, 1−β1, β2,
// 1−β2, the bias corrections c1 = 1/(1−β1^t) and c2 = 1/(1−β2^t), the
// learning rate, ε and the decay factor 1−lr·λ, each rounded to float32.
type adamwK struct {
	gsc, b1, ob1, b2, ob2, c1, c2, lr, eps, decay float32
}

// adamwGo updates the parameters p and moments m, v from the gradient g:
//
//	gi = g·gsc; m = β1·m + (1−β1)·gi; v = β2·v + ((1−β2)·gi)·gi
//	p = p·decay − (lr·(m·c1)) / (√(v·c2) + ε)
func adamwGo(p, g, m, v []float32, k *adamwK) {
	g, m, v = g[:len(p)], m[:len(p)], v[:len(p)]
	for i := range p {
		gi := g[i] * k.gsc
		mi := float32(k.b1*m[i]) + float32(k.ob1*gi)
		vi := float32(k.b2*v[i]) + float32(float32(k.ob2*gi)*gi)
		m[i], v[i] = mi, vi
		den := sqrt32(vi*k.c2) + k.eps
		p[i] = float32(p[i]*k.decay) - float32(k.lr*float32(mi*k.c1))/den
	}
}

// sqrt32 is the correctly rounded float32 square root.
func sqrt32(x float32) float32 { return float32(math.Sqrt(float64(x))) }
