package model

import (
	"math"
	"math/rand/v2"
	"slices"

	"whale/kernels"
)

// sampleScratch is reused by sampleToken across tokens.
type sampleScratch struct {
	cand []int32
	w    []float32
}

// sampleToken draws the next token from logits under the request's
// temperature, top-k and top-p, and returns it with its log-probability
// under the unmodified distribution softmax(logits) and that
// distribution's entropy in nats.
func sampleToken(logits []float32, r *Request, rng *rand.Rand, sc *sampleScratch) (int32, float32, float32) {
	mx := logits[0]
	arg := 0
	for i, v := range logits {
		if v > mx {
			mx, arg = v, i
		}
	}
	// e holds exp(logit - max) (the vector kernel's float32 e^x, within
	// 4e-7 relative): the softmax numerators at temperature 1, which is
	// also the sampling weight when the temperature is 1.
	V := len(logits)
	e := slices.Grow(sc.w[:0], V)[:V]
	sc.w = e
	copy(e, logits)
	kernels.ExpSub(e, mx)
	// With d_i = logit_i - max, p_i = e_i / z and the entropy is
	// -Σ p_i log p_i = log z - Σ e_i d_i / z, both sums in float64.
	var z, ed float64
	for i, w := range e {
		z += float64(w)
		ed += float64(w) * float64(logits[i]-mx)
	}
	lse := float64(mx) + math.Log(z)
	ent := float32(max(0, math.Log(z)-ed/z))
	logp := func(t int) float32 { return float32(float64(logits[t]) - lse) }
	if r.Temperature == 0 || r.TopK == 1 {
		return int32(arg), logp(arg), ent
	}
	if r.Temperature != 1 {
		inv := 1 / r.Temperature
		for i, v := range logits {
			e[i] = (v - mx) * inv
		}
		kernels.ExpSub(e, 0)
	}
	k := V
	if r.TopK > 0 {
		k = min(r.TopK, V)
	}
	nucleus := r.TopP > 0 && r.TopP < 1
	if k == V && !nucleus {
		var sum float64
		for _, w := range e {
			sum += float64(w)
		}
		u := rng.Float64() * sum
		var c float64
		for i, w := range e {
			c += float64(w)
			if u < c {
				return int32(i), logp(i), ent
			}
		}
		return int32(V - 1), logp(V - 1), ent
	}
	// Filters need the tokens by decreasing logit (ties by id).
	cand := sc.cand[:0]
	for i := 0; i < V; i++ {
		cand = append(cand, int32(i))
	}
	sc.cand = cand
	slices.SortFunc(cand, func(a, b int32) int {
		if logits[a] != logits[b] {
			if logits[a] > logits[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	cand = cand[:k]
	var sum float64
	for _, t := range cand {
		sum += float64(e[t])
	}
	if nucleus {
		// Keep the smallest prefix whose probability reaches TopP.
		var c float64
		for i, t := range cand {
			c += float64(e[t])
			if c >= float64(r.TopP)*sum {
				cand, sum = cand[:i+1], c
				break
			}
		}
	}
	u := rng.Float64() * sum
	var c float64
	for _, t := range cand {
		c += float64(e[t])
		if u < c {
			return t, logp(int(t)), ent
		}
	}
	t := cand[len(cand)-1]
	return t, logp(int(t)), ent
}
