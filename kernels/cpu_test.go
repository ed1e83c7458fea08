package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// opEnv hands an op case its inputs. in(n) returns a tensor loaded with the
// next n values of a seeded stream, so every backend sees identical inputs.
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

type opCase struct {
	name string
	// tol bounds max|f32-f64| / max|f64| over each output. Float32 rounds at
	// 6e-8 relative; the longest sums here have ~100 terms of mixed sign, so
	// the error stays well under 1e-5 unless an op is wrong (a wrong index
	// or a missed term gives errors of order 1).
	tol float64
	run func(e *opEnv) []Tensor
}

func host64(be Backend, t Tensor) []float64 {
	h := make([]float64, t.Len())
	be.Store64(h, t)
	return h
}

func opCases() []opCase {
	var cs []opCase
	add := func(name string, run func(e *opEnv) []Tensor) {
		cs = append(cs, opCase{name: name, tol: 1e-5, run: run})
	}
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 65}} {
		m, k, n := sz[0], sz[1], sz[2]
		for _, l := range []Layout{NN, NT, TN} {
			for _, acc := range []bool{false, true} {
				add(fmt.Sprintf("Gemm%s/%dx%dx%d/acc=%v", l, m, k, n, acc), func(e *opEnv) []Tensor {
					out := e.in(m * n)
					e.be.Gemm(l, out, e.in(m*k), e.in(k*n), m, k, n, acc)
					return []Tensor{out}
				})
			}
		}
		add(fmt.Sprintf("GemmBF16NT/%dx%dx%d", m, k, n), func(e *opEnv) []Tensor {
			out := e.in(m * n)
			b := e.be.AllocBF16(k * n)
			e.be.ToBF16(b, e.in(k*n))
			e.be.GemmBF16NT(out, e.in(m*k), b, m, k, n, true)
			return []Tensor{out}
		})
	}
	for _, n := range []int{1, 7, 5000, 70001} {
		add(fmt.Sprintf("Elementwise/%d", n), func(e *opEnv) []Tensor {
			a, b := e.in(n), e.in(n)
			out := e.be.Alloc(n)
			e.be.Add(out, a, b)
			e.be.Scale(a, 0.37)
			ss := e.be.Alloc(1)
			e.be.Load(ss, []float32{float32(e.be.SumSq(b) / float64(n))})
			f := e.be.Alloc(3)
			e.be.Fill(f, 2.5)
			cp := e.be.Alloc(n)
			e.be.Copy(cp, b)
			return []Tensor{out, a, ss, f, cp}
		})
	}
	for _, sz := range [][2]int{{1, 1}, {5, 3}, {130, 33}} {
		rows, n := sz[0], sz[1]
		add(fmt.Sprintf("Bias/%dx%d", rows, n), func(e *opEnv) []Tensor {
			out, bias, db := e.in(rows*n), e.in(n), e.in(n)
			e.be.BiasAdd(out, bias, rows, n)
			e.be.BiasBackward(db, e.in(rows*n), rows, n)
			return []Tensor{out, db}
		})
		add(fmt.Sprintf("Embedding/%dx%d", rows, n), func(e *opEnv) []Tensor {
			V := 11
			table, out := e.in(V*n), e.in(rows*n)
			tok := e.ints(rows, V)
			e.be.Embedding(out, table, tok, n)
			e.be.EmbeddingBackward(table, e.in(rows*n), tok, n)
			return []Tensor{out, table}
		})
		add(fmt.Sprintf("RMSNorm/%dx%d", rows, n), func(e *opEnv) []Tensor {
			out, rstd := e.be.Alloc(rows*n), e.be.Alloc(rows)
			x, w := e.in(rows*n), e.in(n)
			e.be.RMSNorm(out, rstd, x, w, rows, n, 1e-6)
			dx, dw := e.in(rows*n), e.in(n)
			e.be.RMSNormBackward(dx, dw, e.in(rows*n), x, w, rstd, rows, n)
			return []Tensor{out, rstd, dx, dw}
		})
		add(fmt.Sprintf("SwiGLU/%dx%d", rows, n), func(e *opEnv) []Tensor {
			g, u, out := e.in(rows*n), e.in(rows*n), e.be.Alloc(rows*n)
			e.be.SwiGLU(out, g, u)
			dg, du := e.in(rows*n), e.in(rows*n)
			e.be.SwiGLUBackward(dg, du, e.in(rows*n), g, u)
			return []Tensor{out, dg, du}
		})
		add(fmt.Sprintf("CrossEntropy/%dx%d", rows, n), func(e *opEnv) []Tensor {
			logits, loss := e.in(rows*n), e.be.Alloc(rows)
			tg := e.ints(rows, n)
			w := make([]float32, rows)
			for i := range w {
				if i%3 != 1 {
					w[i] = 0.25
				} else {
					tg[i] = -1 // unread when the weight is zero
				}
			}
			dl := e.in(rows * n)
			e.be.CrossEntropy(loss, dl, logits, tg, w, rows, n)
			e.be.CrossEntropy(loss, logits, logits, tg, w, rows, n) // in place
			return []Tensor{loss, dl, logits}
		})
		add(fmt.Sprintf("AdamW/%dx%d", rows, n), func(e *opEnv) []Tensor {
			p, g, m, v := e.in(rows*n), e.in(rows*n), e.in(rows*n), e.pos(rows*n)
			for s := 1; s <= 3; s++ {
				e.be.AdamWUpdate(p, g, m, v, AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 0.5, Step: s})
			}
			return []Tensor{p, m, v}
		})
	}
	for _, sz := range [][4]int{{1, 1, 1, 2}, {3, 2, 1, 6}, {7, 4, 2, 8}, {attnBlock + 6, 2, 1, 4}, {21, 8, 2, 12}, {attnBlock + 6, 4, 1, 8}} {
		rows, H, KVH, hd := sz[0], sz[1], sz[2], sz[3]
		add(fmt.Sprintf("RoPE/%dx%dx%d", rows, H, hd), func(e *opEnv) []Tensor {
			x, out := e.in(rows*H*hd), e.be.Alloc(rows*H*hd)
			pos := e.ints(rows, 4000)
			e.be.RoPE(out, x, pos, rows, H, hd, 10000)
			dx := e.in(rows * H * hd)
			e.be.RoPEBackward(dx, e.in(rows*H*hd), pos, rows, H, hd, 1e6)
			return []Tensor{out, dx}
		})
		for _, B := range []int{1, 2} {
			T := rows
			add(fmt.Sprintf("Attention/B%dT%dH%dKV%dhd%d", B, T, H, KVH, hd), func(e *opEnv) []Tensor {
				N := B * T
				q, k, v := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
				out, lse := e.be.Alloc(N*H*hd), e.be.Alloc(B*H*T)
				e.be.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
				dq, dk, dv := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
				e.be.AttentionBackward(dq, dk, dv, e.in(N*H*hd), out, lse, q, k, v, B, T, H, KVH, hd)
				return []Tensor{out, lse, dq, dk, dv}
			})
		}
		add(fmt.Sprintf("AttentionKV/R%dH%dKV%dhd%d", rows, H, KVH, hd), func(e *opEnv) []Tensor {
			// Two sequences: one prefilling rows at positions 2.., one decoding
			// a single row at position rows+1.
			cap := rows + 5
			var spans []KVSpan
			var caches []Tensor
			for s, sp := range [][2]int{{2, rows}, {rows + 1, 1}} {
				kc, vc := e.be.Alloc(KVH*cap*hd), e.be.Alloc(KVH*cap*hd)
				n := sp[0] + sp[1]
				e.be.CacheWrite(kc, e.in(n*KVH*hd), Keys, 0, n, KVH, hd, cap)
				e.be.CacheWrite(vc, e.in(n*KVH*hd), Values, 0, n, KVH, hd, cap)
				spans = append(spans, KVSpan{K: kc, V: vc, Cap: cap, QRow: s * rows, Rows: sp[1], Pos0: sp[0]})
				caches = append(caches, kc, vc)
			}
			q, out := e.in((rows+1)*H*hd), e.be.Alloc((rows+1)*H*hd)
			e.be.AttentionKV(out, q, spans, H, KVH, hd)
			// The same through a copy into a larger cache.
			big := e.be.Alloc(KVH * (cap + 3) * hd)
			e.be.CacheCopy(big, spans[0].K, Keys, 0, 0, rows+2, KVH, hd, cap+3, cap)
			spans[0].K, spans[0].Cap = big, cap+3
			bigV := e.be.Alloc(KVH * (cap + 3) * hd)
			e.be.CacheCopy(bigV, spans[0].V, Values, 0, 0, rows+2, KVH, hd, cap+3, cap)
			spans[0].V = bigV
			out2 := e.be.Alloc((rows + 1) * H * hd)
			e.be.AttentionKV(out2, q, spans, H, KVH, hd)
			return append(caches, out, out2)
		})
	}
	return cs
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

func runCase(be Backend, c opCase) [][]float64 {
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 2))}
	var r [][]float64
	for _, t := range c.run(e) {
		r = append(r, host64(be, t))
	}
	return r
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

// TestCPUOpsFloat32VsFloat64 runs every op on both CPU backends from the
// same inputs.
func TestCPUOpsFloat32VsFloat64(t *testing.T) {
	for _, c := range opCases() {
		got := runCase(NewCPU(), c)
		want := runCase(NewCPU64(), c)
		for i := range want {
			if e := relErr(got[i], want[i]); !(e <= c.tol) {
				t.Errorf("%s output %d: float32 vs float64 relative error %.3g > %.1g", c.name, i, e, c.tol)
			}
		}
	}
}

// TestCPUOpsThreadInvariant checks that every op gives bit-identical
// float32 results with 1, 2 and 3 threads.
func TestCPUOpsThreadInvariant(t *testing.T) {
	defer SetThreads(Threads())
	for _, c := range opCases() {
		SetThreads(1)
		want := runCase(NewCPU(), c)
		for _, n := range []int{2, 3} {
			SetThreads(n)
			got := runCase(NewCPU(), c)
			for i := range want {
				for j := range want[i] {
					if math.Float64bits(got[i][j]) != math.Float64bits(want[i][j]) {
						t.Fatalf("%s output %d element %d: %d threads give %v, 1 thread %v", c.name, i, j, n, got[i][j], want[i][j])
					}
				}
			}
		}
	}
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
