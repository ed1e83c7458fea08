package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// The checks in cpu_test.go compare the float32 and float64 runs of the
// same generic code, so a formula wrong in both (a dropped bias correction,
// eps in the wrong place) passes them. These compare each op with its
// textbook formula written out here in float64, on both element types:
// float32 within 1e-5 relative, float64 within 1e-12.

func formulaTol(be Backend) float64 {
	if be.Name() == "cpu/float64" {
		return 1e-12
	}
	return 1e-5
}

func formulaBackends() []Backend { return []Backend{NewCPU(), NewCPU64()} }

// load puts float64 values (already representable in float32) on be.
func load(be Backend, h []float64) Tensor {
	t := be.Alloc(len(h))
	be.Load64(t, h)
	return t
}

// normals returns n values scale·N(0,1), rounded to float32 so that both
// backends start from the same numbers.
func normals(rng *rand.Rand, n int, scale float64) []float64 {
	h := make([]float64, n)
	for i := range h {
		h[i] = float64(float32(scale * rng.NormFloat64()))
	}
	return h
}

func checkFormula(t *testing.T, be Backend, what string, got, want []float64) {
	t.Helper()
	if e := relErr(got, want); !(e <= formulaTol(be)) {
		t.Errorf("%s %s: relative error %.3g against the direct formula > %.0g", be.Name(), what, e, formulaTol(be))
	}
}

// RMSNorm: y = x / sqrt(mean(x²) + eps) · w. Rows of small values and a
// large eps make eps carry weight, so eps outside the square root, or a
// sum where the mean belongs, fails.
func TestRMSNormMatchesFormula(t *testing.T) {
	const rows, C, eps = 5, 24, 1e-2
	rng := rand.New(rand.NewPCG(11, 1))
	x := normals(rng, rows*C, 1)
	for j := range C { // two rows of small values
		x[C+j] *= 1.0 / 16
		x[3*C+j] *= 1.0 / 64
	}
	w := normals(rng, C, 1)
	for _, be := range formulaBackends() {
		out, rstd := be.Alloc(rows*C), be.Alloc(rows)
		be.RMSNorm(out, rstd, load(be, x), load(be, w), rows, C, eps)
		wantY, wantR := make([]float64, rows*C), make([]float64, rows)
		for r := range rows {
			var ss float64
			for j := range C {
				ss += x[r*C+j] * x[r*C+j]
			}
			wantR[r] = 1 / math.Sqrt(ss/C+eps)
			for j := range C {
				wantY[r*C+j] = x[r*C+j] * wantR[r] * w[j]
			}
		}
		checkFormula(t, be, "RMSNorm out", host64(be, out), wantY)
		checkFormula(t, be, "RMSNorm rstd", host64(be, rstd), wantR)
	}
}

// SwiGLU: y = silu(g)·u = g·σ(g)·u, σ(g) = 1/(1+e^-g).
func TestSwiGLUMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	n := 1000 // past one 256-element block of the backward pass and odd-sized
	g, u := normals(rng, n, 3), normals(rng, n, 1)
	for _, be := range formulaBackends() {
		out := be.Alloc(n)
		be.SwiGLU(out, load(be, g), load(be, u))
		want := make([]float64, n)
		for i := range want {
			want[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
		}
		checkFormula(t, be, "SwiGLU", host64(be, out), want)
	}
}

// Softmax cross-entropy: loss = w·(log Σ_j e^{z_j} − z_t) and
// ∂loss/∂z = w·(softmax(z) − onehot(t)); a weight of 0 gives 0 and no
// gradient. Large logits (±30) check the max subtraction.
func TestCrossEntropyMatchesFormula(t *testing.T) {
	const rows, V = 6, 37
	rng := rand.New(rand.NewPCG(11, 3))
	z := normals(rng, rows*V, 4)
	z[2*V+5] = 30
	z[4*V+1] = -30
	targets := []int32{0, 36, 5, 7, 1, 12}
	weight := []float32{1, 0.5, 2, 0, 1, 0.25}
	for _, be := range formulaBackends() {
		loss, dl := be.Alloc(rows), be.Alloc(rows*V)
		be.CrossEntropy(loss, dl, load(be, z), targets, weight, rows, V)
		wantL, wantD := make([]float64, rows), make([]float64, rows*V)
		for r := range rows {
			w := float64(weight[r])
			if w == 0 {
				continue
			}
			var sum float64
			for j := range V {
				sum += math.Exp(z[r*V+j])
			}
			wantL[r] = w * (math.Log(sum) - z[r*V+int(targets[r])])
			for j := range V {
				wantD[r*V+j] = w * math.Exp(z[r*V+j]) / sum
			}
			wantD[r*V+int(targets[r])] -= w
		}
		checkFormula(t, be, "CrossEntropy loss", host64(be, loss), wantL)
		checkFormula(t, be, "CrossEntropy dlogits", host64(be, dl), wantD)
	}
}

// AdamW (Loshchilov & Hutter), three steps from zero moments:
//
//	g ← s·g; m ← β1·m + (1−β1)·g; v ← β2·v + (1−β2)·g²
//	m̂ = m/(1−β1^t); v̂ = v/(1−β2^t)
//	p ← p − lr·(m̂/(√v̂ + ε) + λ·p)
//
// The decay is decoupled: it never enters m or v. The parameter deltas are
// compared (not the parameters, whose size would hide a wrong delta), with
// settings under which each term moves them: at t = 1 the bias correction
// scales m by 8 and v by 1024, λ·p is a tenth of the step, and ε is
// comparable to √v̂ for the small gradients. β1 and β2 are exact in float32
// with exact 1−β: the kernel forms 1−β in the element type, and for
// β2 = 0.999 float32 rounding alone moves v by 1.3e-5 relative.
func TestAdamWMatchesFormula(t *testing.T) {
	const n = 300
	h := AdamW{LR: 1e-2, Beta1: 0.875, Beta2: 1 - 1.0/1024, Eps: 1e-3, WeightDecay: 2, GradScale: 0.5}
	rng := rand.New(rand.NewPCG(11, 4))
	p0 := normals(rng, n, 0.05)
	grads := [][]float64{normals(rng, n, 1), normals(rng, n, 1), normals(rng, n, 1)}
	for i := 0; i < n; i += 7 {
		for _, g := range grads {
			g[i] *= 1.0 / 512 // where ε matters
		}
	}
	for _, be := range formulaBackends() {
		p, m, v := load(be, p0), be.Alloc(n), be.Alloc(n)
		wp := append([]float64(nil), p0...)
		wm, wv := make([]float64, n), make([]float64, n)
		for step, g := range grads {
			h.Step = step + 1
			before := host64(be, p)
			be.AdamWUpdate(p, load(be, g), m, v, h)
			prev := append([]float64(nil), wp...)
			for i := range wp {
				gi := h.GradScale * g[i]
				wm[i] = h.Beta1*wm[i] + (1-h.Beta1)*gi
				wv[i] = h.Beta2*wv[i] + (1-h.Beta2)*gi*gi
				mh := wm[i] / (1 - math.Pow(h.Beta1, float64(h.Step)))
				vh := wv[i] / (1 - math.Pow(h.Beta2, float64(h.Step)))
				wp[i] -= h.LR * (mh/(math.Sqrt(vh)+h.Eps) + h.WeightDecay*wp[i])
			}
			got, want := host64(be, p), make([]float64, n)
			for i := range got {
				got[i] -= before[i]
				want[i] = wp[i] - prev[i]
			}
			checkFormula(t, be, fmt.Sprintf("AdamW step %d delta", h.Step), got, want)
			checkFormula(t, be, "AdamW m", host64(be, m), wm)
			checkFormula(t, be, "AdamW v", host64(be, v), wv)
		}
	}
}
