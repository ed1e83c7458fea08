package kernels

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// opEnv hands a test its inputs. in(n) returns a tensor loaded with the
// next n values of a seeded stream, so every backend sees identical inputs.
// (The op table every backend runs is kernels/kerneltest's; its CPU run
// is optable_test.go.)
type opEnv struct {
	be  Backend
	rng *rand.Rand
}

func (e *opEnv) in(n int) Tensor {
	h := make([]float32, n)
	for i := range h {
		h[i] = float32(e.rng.NormFloat64())
	}
	t := e.be.Alloc(n)
	e.be.Load(t, h)
	return t
}

// pos returns n positive values (RMSNorm rstd, softmax log-sum-exps).
func (e *opEnv) pos(n int) Tensor {
	h := make([]float32, n)
	for i := range h {
		h[i] = 0.5 + e.rng.Float32()
	}
	t := e.be.Alloc(n)
	e.be.Load(t, h)
	return t
}

func (e *opEnv) ints(n, hi int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(e.rng.IntN(hi))
	}
	return r
}

func host64(be Backend, t Tensor) []float64 {
	h := make([]float64, t.Len())
	be.Store64(h, t)
	return h
}

// splitSpan returns sp (one sequence whose K and V of capacity cap are k,
// v) with its first pn positions moved to a prefix cache of capacity pn+1
// and the rest to a cache of its own, as a sampler sharing a prompt lays
// them out (pn a multiple of KVBlock).
func splitSpan(be Backend, sp KVSpan, k, v Tensor, cap, pn, KVH, hd int) KVSpan {
	n := sp.Pos0 + sp.Rows
	pk, pv := be.Alloc(KVH*(pn+1)*hd), be.Alloc(KVH*(pn+1)*hd)
	ok, ov := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
	be.CacheCopy(pk, k, Keys, 0, 0, pn, KVH, hd, pn+1, cap)
	be.CacheCopy(pv, v, Values, 0, 0, pn, KVH, hd, pn+1, cap)
	be.CacheCopy(ok, k, Keys, 0, pn, n-pn, KVH, hd, cap, cap)
	be.CacheCopy(ov, v, Values, 0, pn, n-pn, KVH, hd, cap, cap)
	sp.K, sp.V, sp.PK, sp.PV, sp.PCap, sp.PN = ok, ov, pk, pv, pn+1, pn
	return sp
}

func relErr(a, b []float64) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i]))
		m = max(m, math.Abs(b[i]))
	}
	if m == 0 {
		return d
	}
	return d / m
}

// TestAttentionKVRowInvariant: a row's result is bit-identical whether it
// is computed alone or with other rows and spans (the sampler relies on it
// for batch-independent sampling and exact prefix reuse).
func TestAttentionKVRowInvariant(t *testing.T) {
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(8, 8))}
	H, KVH, hd, n, cap := 8, 2, 32, 40, 48
	kc, vc := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
	be.CacheWrite(kc, e.in(n*KVH*hd), Keys, 0, n, KVH, hd, cap)
	be.CacheWrite(vc, e.in(n*KVH*hd), Values, 0, n, KVH, hd, cap)
	q := e.in(n * H * hd)
	all := be.Alloc(n * H * hd)
	be.AttentionKV(all, q, []KVSpan{{K: kc, V: vc, Cap: cap, QRow: 0, Rows: n, Pos0: 0}}, H, KVH, hd)
	want := host64(be, all)
	for r := 0; r < n; r += 7 {
		one := be.Alloc(H * hd)
		be.AttentionKV(one, q.View(r*H*hd, H*hd), []KVSpan{{K: kc, V: vc, Cap: cap, QRow: 0, Rows: 1, Pos0: r}}, H, KVH, hd)
		for j, v := range host64(be, one) {
			if v != want[r*H*hd+j] {
				t.Fatalf("row %d alone differs from the same row in a batch at element %d", r, j)
			}
		}
	}
}

// TestAttentionStackedHeadsSameBits: the training attention stacks the
// query heads of a KV group into one product per block only where that
// keeps every bit: each head's outputs and log-sum-exps equal those of the
// head attended alone (a group of one), including blocks too short for the
// packed kernel (T = 20, and T = 80's last 16 rows).
func TestAttentionStackedHeadsSameBits(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		be := NewCPU()
		e := &opEnv{be: be, rng: rand.New(rand.NewPCG(2, 5))}
		const H, hd = 4, 8
		for _, T_ := range []int{5, 20, 64, 80, 130} {
			q, k, v := e.in(T_*H*hd), e.in(T_*hd), e.in(T_*hd)
			out, lse := be.Alloc(T_*H*hd), be.Alloc(H*T_)
			be.Attention(out, lse, q, k, v, 1, T_, H, 1, hd)
			qs := make([]float32, T_*H*hd)
			be.Store(qs, q)
			got, gotL := make([]float32, T_*H*hd), make([]float32, H*T_)
			be.Store(got, out)
			be.Store(gotL, lse)
			for h := 0; h < H; h++ {
				qh := make([]float32, T_*hd)
				for r := 0; r < T_; r++ {
					copy(qh[r*hd:r*hd+hd], qs[r*H*hd+h*hd:])
				}
				q1, o1, l1 := be.Alloc(T_*hd), be.Alloc(T_*hd), be.Alloc(T_)
				be.Load(q1, qh)
				be.Attention(o1, l1, q1, k, v, 1, T_, 1, 1, hd)
				want, wantL := make([]float32, T_*hd), make([]float32, T_)
				be.Store(want, o1)
				be.Store(wantL, l1)
				for r := 0; r < T_; r++ {
					if math.Float32bits(gotL[h*T_+r]) != math.Float32bits(wantL[r]) {
						t.Fatalf("T=%d head %d row %d: lse %v stacked, %v alone", T_, h, r, gotL[h*T_+r], wantL[r])
					}
					for d := 0; d < hd; d++ {
						if g, w := got[r*H*hd+h*hd+d], want[r*hd+d]; math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("T=%d head %d row %d dim %d: %v stacked, %v alone", T_, h, r, d, g, w)
						}
					}
				}
			}
		}
	})
}

// TestRoPETableGivesTheAnglesOfEachRow: rows whose positions the angle
// table covers rotate to the same bits as rows past it (ropeTableMax),
// which compute their angles themselves, in both directions, and the
// table grows safely under concurrent calls.
func TestRoPETableGivesTheAnglesOfEachRow(t *testing.T) {
	const H, hd, theta = 3, 16, 12345.0
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(7, 8))}
	x := e.in(2 * H * hd)
	for _, p := range []int32{0, 1, 255, 256, 4095} {
		for _, backward := range []bool{false, true} {
			table, direct := be.Alloc(2*H*hd), be.Alloc(2*H*hd)
			rope := be.RoPE
			if backward {
				be.Fill(table, 0)
				be.Fill(direct, 0)
				rope = be.RoPEBackward
			}
			rope(table, x, []int32{p, p + 1}, 2, H, hd, theta)
			rope(direct, x, []int32{p, ropeTableMax + 5}, 2, H, hd, theta) // past the table: no table for the call
			a, b := be.s(table)[:H*hd], be.s(direct)[:H*hd]
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("position %d (backward %v) element %d: table %v, direct %v", p, backward, i, a[i], b[i])
				}
			}
		}
	}
	// A shape of its own, so that its table starts empty and grows while
	// eight goroutines read it.
	x2 := e.in(2 * H * 2 * hd)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := be.Alloc(2 * H * 2 * hd)
			for p := int32(g * 300); p < int32(g*300+2000); p += 97 {
				be.RoPE(out, x2, []int32{p, p + 1}, 2, H, 2*hd, theta)
			}
		}()
	}
	wg.Wait()
}
