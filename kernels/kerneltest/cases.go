package kerneltest

import (
	"fmt"
	"math"

	"whale/kernels"
)

// Case is one op (or a short chain of ops) on seeded inputs. Its outputs
// are everything it records, plus (added by Env.Finish) the guards.
type Case struct {
	// Name is the op and its shape, unique in the table.
	Name string
	// Op names the row of the tolerance table (tolerances.go) that judges
	// the case's outputs.
	Op string
	// DType is the element type of the data the op computes on: F32, or
	// BF16 where an operand is (or the result is rounded to) bfloat16.
	DType DType
	// Exact marks an op with one right answer (moves, roundings, gathers,
	// checks): every output must equal the reference's bit for bit, once
	// the reference's float64 value is rounded to float32 as the op's own
	// element type would hold it.
	Exact bool
	// Large marks the model-sized shapes, whose float64 reference takes
	// most of the table's time (seconds each on one core): the CPU
	// backend's tests run them with the long tests only.
	Large bool
	Run   func(e *Env)
}

// Tol is the bound on the normalised error of the case's outputs (0 for
// an exact case).
func (c Case) Tol() float64 {
	if c.Exact {
		return 0
	}
	return Tolerance(c.Op, c.DType)
}

// Kind is the case's tolerance class in reports: "exact", "f32" or "bf16".
func (c Case) Kind() string {
	if c.Exact {
		return "exact"
	}
	return string(c.DType)
}

// Cases returns the table: every op of kernels.Backend over shapes from
// the tiny (a single element, tails shorter than a vector) to the model's
// (a training micro-batch of 1024 rows, one decoding row through the MLP,
// a 151936-token vocabulary). Each backend's tests run all of it.
func Cases() []Case {
	var t table
	t.memory()
	t.gemm()
	t.elementwise()
	t.rows()
	for _, a := range TrainingAttention {
		t.cs = append(t.cs, AttentionCases(a)...)
	}
	t.attentionKV()
	t.loss()
	return t.cs
}

type table struct {
	cs []Case
	// large is set while the cases added are model-sized (Case.Large).
	large bool
}

func (t *table) add(op string, dt DType, exact bool, name string, run func(e *Env)) {
	t.cs = append(t.cs, Case{Name: name, Op: op, DType: dt, Exact: exact, Large: t.large, Run: run})
}

// huge is the element count past which a case is Large: past every tile,
// vector tail and parallel grain the small sizes exercise.
const huge = 1 << 20

// sized sets t.large for a case whose data or work is past huge and
// returns t (for chaining into add).
func (t *table) sized(elems int) *table {
	t.large = elems > huge
	return t
}

// memory: Load/Store/Load64/Store64, Fill, Copy, ToBF16: moves and
// roundings with one right answer, so bit-exact. The sizes straddle the
// CPU backend's parallel grain (copyGrain, 65536 elements).
func (t *table) memory() {
	for _, n := range []int{1, 7, 4099, 5000, 70001, 1<<20 + 3} {
		t.sized(n).add("Load", F32, true, fmt.Sprintf("LoadStore/%d", n), func(e *Env) {
			x := e.In(n)
			e.Out("Store", x)
			e.Out64("Store64", x) // widening is exact
			h := make([]float64, n)
			for i := range h {
				h[i] = e.Rng.NormFloat64() * math.Pow(10, float64(e.Rng.IntN(9)-4))
			}
			x64 := e.Zeros(n)
			e.Be.Load64(x64, h) // rounds to nearest float32
			e.Out64("Load64", x64)
		})
		t.sized(n).add("Fill", F32, true, fmt.Sprintf("Fill/%d", n), func(e *Env) {
			a, b := e.In(n), e.In(n)
			e.Be.Fill(a, 2.5)
			e.Be.Fill(b, 0)
			c := e.In(n)
			e.Be.Fill(c.View(n/3, n-n/3), -1e-3)
			e.Out("2.5", a)
			e.Out("0", b)
			e.Out("part", c)
		})
		t.sized(n).add("Copy", F32, true, fmt.Sprintf("Copy/%d", n), func(e *Env) {
			a, d := e.In(n), e.In(n)
			e.Be.Copy(d, a)
			e.Out("dst", d)
			// Between two views of one allocation.
			p := e.In(2 * n)
			e.Be.Copy(p.View(0, n), p.View(n, n))
			e.Out("views", p)
		})
		t.sized(n).add("ToBF16", BF16, true, fmt.Sprintf("ToBF16/%d", n), func(e *Env) {
			h := make([]float32, n)
			for i := range h {
				h[i] = float32(e.Rng.NormFloat64() * math.Pow(10, float64(e.Rng.IntN(21)-10)))
			}
			d := e.BF16(n)
			e.Be.ToBF16(d, e.Load(h))
			e.OutBF16("bf16", d)
		})
	}
	// Rounding's corners: ties to even both ways, carries into the
	// exponent, overflow to Inf, NaN kept a NaN, the smallest normals.
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1,
		1 + 1.0/256, 1 + 3.0/256, -(1 + 1.0/256), 1 + 1.0/256 + 1.0/(1<<20), 1 + 255.0/256,
		math.Float32frombits(0x3f7fffff), math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000),
		math.MaxFloat32, -math.MaxFloat32, 3.38e38, 3.39e38, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc12345),
		1e-37, -1e-37, math.Float32frombits(0x00800000), 65504, 1e10, -123.456}
	t.sized(0).add("ToBF16", BF16, true, "ToBF16/special", func(e *Env) {
		d := e.BF16(len(special))
		e.Be.ToBF16(d, e.Load(special))
		e.OutBF16("bf16", d)
	})
	// Subnormals apart: a GPU built to flush them to zero fails here
	// alone (the CPU keeps them).
	subnormal := []float32{1e-40, -3e-41, math.Float32frombits(1), math.Float32frombits(0x00018000), math.Float32frombits(0x807fffff)}
	t.sized(0).add("ToBF16", BF16, true, "ToBF16/subnormal", func(e *Env) {
		d := e.BF16(len(subnormal))
		e.Be.ToBF16(d, e.Load(subnormal))
		e.OutBF16("bf16", d)
	})
}

// gemm: Gemm in every layout with and without acc, tiny (edges of every
// register tile) to the model's shapes (1024 rows of a training
// micro-batch, one decoding row through the MLP), and GemmBF16NT.
func (t *table) gemm() {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 65}, {3, 0, 5}, {23, 129, 70},
		{1, 768, 3072}, {1024, 704, 256}, {1024, 256, 704}, {128, 1024, 3072}}
	for _, s := range shapes {
		m, k, n := s[0], s[1], s[2]
		for _, l := range []kernels.Layout{kernels.NN, kernels.NT, kernels.TN} {
			for _, acc := range []bool{false, true} {
				t.sized(m*k*n/8).add("Gemm", F32, false, fmt.Sprintf("Gemm%s/%dx%dx%d/acc=%v", l, m, k, n, acc), func(e *Env) {
					out := e.In(m * n) // overwritten unless acc
					e.Be.Gemm(l, out, e.In(m*k), e.In(k*n), m, k, n, acc)
					e.Out("out", out)
				})
			}
		}
	}
	bshapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 65}, {3, 0, 5}, {23, 129, 70},
		{1, 768, 3072}, {1, 1024, 32000}, {64, 1024, 3072}, {1024, 256, 704}, {48, 4096, 256}}
	for _, s := range bshapes {
		m, k, n := s[0], s[1], s[2]
		for _, acc := range []bool{false, true} {
			t.sized(m*k*n/8).add("GemmBF16NT", BF16, false, fmt.Sprintf("GemmBF16NT/%dx%dx%d/acc=%v", m, k, n, acc), func(e *Env) {
				out := e.In(m * n)
				b := e.BF16(k * n)
				e.Be.ToBF16(b, e.In(k*n))
				e.Be.GemmBF16NT(out, e.In(m*k), b, m, k, n, acc)
				e.Out("out", out)
			})
		}
	}
}

// elementwise: Add (and its aliasing), Scale, SumSq, AllFinite, SwiGLU
// and its backward, AdamW; sizes below one vector, with tails of every
// length and past the CPU's parallel grain.
func (t *table) elementwise() {
	sizes := []int{1, 7, 5000, 70001, 1<<20 + 3}
	for _, n := range sizes {
		t.sized(n).add("Add", F32, false, fmt.Sprintf("Add/%d", n), func(e *Env) {
			a, b, out := e.In(n), e.In(n), e.In(n)
			e.Be.Add(out, a, b)
			e.Out("out", out)
		})
		t.sized(n).add("Add", F32, false, fmt.Sprintf("Add/alias/%d", n), func(e *Env) {
			a, b, c := e.In(n), e.In(n), e.In(n)
			e.Be.Add(a, a, b) // out = a
			e.Be.Add(c, b, c) // out = b
			e.Be.Add(b, b, b) // out = a = b
			e.Out("out=a", a)
			e.Out("out=b", c)
			e.Out("out=a=b", b)
		})
		t.sized(n).add("Scale", F32, false, fmt.Sprintf("Scale/%d", n), func(e *Env) {
			a := e.In(n)
			e.Be.Scale(a, 0.37)
			e.Out("x", a)
		})
		t.sized(n).add("SumSq", F32, false, fmt.Sprintf("SumSq/%d", n), func(e *Env) {
			e.Val("sumsq", false, e.Be.SumSq(e.In(n)))
			big := e.Load(e.Normals(n, 1e18)) // float32 squares would overflow
			e.Val("sumsq(1e18·x)", false, e.Be.SumSq(big))
		})
		t.sized(n).add("AllFinite", F32, true, fmt.Sprintf("AllFinite/%d", n), func(e *Env) {
			h := e.Normals(n, 1)
			e.Val("clean", true, b2f(e.Be.AllFinite(e.Load(h))))
			h[0] = math.MaxFloat32 // finite, though its square is not
			e.Val("max float", true, b2f(e.Be.AllFinite(e.Load(h))))
			for _, bad := range []struct {
				at int
				v  float64
			}{{n - 1, math.NaN()}, {0, math.Inf(1)}, {n / 2, math.Inf(-1)}} {
				b := append([]float32(nil), h...)
				b[bad.at] = float32(bad.v)
				e.Val(fmt.Sprintf("%v at %d", bad.v, bad.at), true, b2f(e.Be.AllFinite(e.Load(b))))
			}
		})
	}
	// SwiGLU: also 15 and 4290 elements (a tail after one and after many
	// 256-element blocks of the backward pass).
	for _, n := range []int{1, 7, 15, 4290, 5000, 70001, 1<<20 + 3} {
		t.sized(n).add("SwiGLU", F32, false, fmt.Sprintf("SwiGLU/%d", n), func(e *Env) {
			g, u, out := e.Load(gates(e, n)), e.In(n), e.In(n)
			e.Be.SwiGLU(out, g, u)
			e.Out("out", out)
		})
		t.sized(n).add("SwiGLUBackward", F32, false, fmt.Sprintf("SwiGLUBackward/%d", n), func(e *Env) {
			g, u := e.Load(gates(e, n)), e.In(n)
			dg, du := e.In(n), e.In(n)
			e.Be.SwiGLUBackward(dg, du, e.In(n), g, u)
			e.Out("dgate", dg)
			e.Out("dup", du)
		})
	}
	for _, n := range []int{1, 15, 4099, 4290, 1<<20 + 3} {
		// Three steps from seeded moments with a fresh gradient each,
		// clipping folded into GradScale, decoupled decay.
		t.sized(n).add("AdamW", F32, false, fmt.Sprintf("AdamW/%d/decay", n), func(e *Env) {
			p, m, v := e.In(n), e.In(n), e.Pos(n)
			for s := 1; s <= 3; s++ {
				e.Be.AdamWUpdate(p, e.In(n), m, v, kernels.AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 0.5, Step: s})
			}
			e.Out("p", p)
			e.Out("m", m)
			e.Out("v", v)
		})
		// A fresh optimizer (zero moments, the first steps' large bias
		// correction), no decay, no scaling, small gradients near eps.
		t.sized(n).add("AdamW", F32, false, fmt.Sprintf("AdamW/%d/fresh", n), func(e *Env) {
			p, m, v := e.In(n), e.Zeros(n), e.Zeros(n)
			for s := 1; s <= 5; s++ {
				g := e.Load(e.Normals(n, math.Pow(10, float64(-s))))
				e.Be.AdamWUpdate(p, g, m, v, kernels.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-6, GradScale: 1, Step: s})
			}
			e.Out("p", p)
			e.Out("m", m)
			e.Out("v", v)
		})
	}
}

// gates are SwiGLU gate values with tails: sigmoid saturating both ways.
func gates(e *Env, n int) []float32 {
	h := e.Normals(n, 4)
	for i := 0; i < n; i += 97 {
		h[i] = float32(100 * (2*e.Rng.Float64() - 1))
	}
	return h
}

// rows: ops over rows of C: BiasAdd/BiasBackward, Embedding and its
// backward, RMSNorm and its backward, RoPE and its backward.
func (t *table) rows() {
	for _, s := range [][2]int{{1, 1}, {5, 3}, {130, 33}, {1024, 768}, {1000, 1024}} {
		rows, n := s[0], s[1]
		t.sized(rows*n).add("BiasAdd", F32, false, fmt.Sprintf("BiasAdd/%dx%d", rows, n), func(e *Env) {
			out := e.In(rows * n)
			e.Be.BiasAdd(out, e.In(n), rows, n)
			e.Out("out", out)
		})
		t.sized(rows*n).add("BiasBackward", F32, false, fmt.Sprintf("BiasBackward/%dx%d", rows, n), func(e *Env) {
			db := e.In(n)
			e.Be.BiasBackward(db, e.In(rows*n), rows, n)
			e.Out("dbias", db)
		})
	}
	// V, C, rows, and the tokens' range (small: every row repeats).
	for _, s := range [][4]int{{11, 1, 1, 11}, {11, 3, 5, 11}, {11, 33, 130, 11}, {512, 256, 1024, 512}, {4096, 1024, 512, 4096}, {5, 64, 4096, 2}} {
		V, C, rows, hi := s[0], s[1], s[2], s[3]
		t.sized(max(V, rows)*C).add("Embedding", F32, true, fmt.Sprintf("Embedding/V%dC%d/rows%d", V, C, rows), func(e *Env) {
			table, out := e.In(V*C), e.In(rows*C)
			e.Be.Embedding(out, table, e.Ints(rows, hi), C)
			e.Out("out", out)
		})
		t.sized(max(V, rows)*C).add("EmbeddingBackward", F32, false, fmt.Sprintf("EmbeddingBackward/V%dC%d/rows%d/tokens<%d", V, C, rows, hi), func(e *Env) {
			dtable := e.In(V * C)
			e.Be.EmbeddingBackward(dtable, e.In(rows*C), e.Ints(rows, hi), C)
			e.Out("dtable", dtable)
		})
	}
	for _, s := range [][2]int{{1, 1}, {5, 3}, {130, 33}, {64, 1024}, {1024, 256}, {4096, 128}, {7, 3072}} {
		rows, C := s[0], s[1]
		t.sized(rows*C).add("RMSNorm", F32, false, fmt.Sprintf("RMSNorm/%dx%d", rows, C), func(e *Env) {
			x, w := e.In(rows*C), e.In(C)
			out, rstd := e.In(rows*C), e.In(rows)
			e.Be.RMSNorm(out, rstd, x, w, rows, C, 1e-6)
			e.Out("out", out)
			e.Out("rstd", rstd)
			out2 := e.In(rows * C)
			e.Be.RMSNorm(out2, kernels.Tensor{}, x, w, rows, C, 1e-6) // rstd not saved
			e.Out("out (no rstd)", out2)
		})
		t.sized(rows*C).add("RMSNormBackward", F32, false, fmt.Sprintf("RMSNormBackward/%dx%d", rows, C), func(e *Env) {
			xh := e.Normals(rows*C, 1)
			x, w, rstd := e.Load(xh), e.In(C), e.Load(rstdOf(xh, rows, C, 1e-6))
			dout := e.In(rows * C)
			dx, dw := e.In(rows*C), e.In(C)
			e.Be.RMSNormBackward(dx, dw, dout, x, w, rstd, rows, C)
			e.Out("dx", dx)
			e.Out("dw", dw)
			dx2 := e.In(rows * C)
			e.Be.RMSNormBackward(dx2, kernels.Tensor{}, dout, x, w, rstd, rows, C) // frozen weight
			e.Out("dx (no dw)", dx2)
		})
	}
	// rows, heads, hd, positions below, theta. Large positions check that
	// the angle pos·θ^(−2i/hd) is formed as precisely as in float64: in
	// float32 it is off by ~1e-4 at position 4000. The small head sizes
	// (2 to 12) are the training attention's shapes below.
	for _, s := range []struct {
		rows, H, hd, maxPos int
		theta               float64
	}{{1, 1, 2, 10, 1e4}, {3, 2, 6, 100, 1e4}, {70, 4, 32, 4000, 1e6}, {33, 16, 128, 4000, 1e6}, {17, 8, 128, 40960, 1e6}, {1024, 8, 32, 2048, 1e6},
		{1, 1, 2, 4000, 1e4}, {3, 2, 6, 4000, 1e4}, {7, 4, 8, 4000, 1e4}, {70, 2, 4, 4000, 1e4}, {21, 8, 12, 4000, 1e4}, {70, 4, 8, 4000, 1e4}} {
		rows, H, hd, maxPos, theta := s.rows, s.H, s.hd, s.maxPos, s.theta
		name := fmt.Sprintf("%dx%dx%d/pos<%d", rows, H, hd, maxPos)
		t.sized(rows*H*hd).add("RoPE", F32, false, "RoPE/"+name, func(e *Env) {
			x, out := e.In(rows*H*hd), e.In(rows*H*hd)
			pos := e.Ints(rows, maxPos)
			e.Be.RoPE(out, x, pos, rows, H, hd, theta)
			e.Out("out", out)
			e.Be.RoPE(x, x, pos, rows, H, hd, theta) // in place
			e.Out("in place", x)
		})
		t.sized(rows*H*hd).add("RoPEBackward", F32, false, "RoPEBackward/"+name, func(e *Env) {
			dx := e.In(rows * H * hd)
			e.Be.RoPEBackward(dx, e.In(rows*H*hd), e.Ints(rows, maxPos), rows, H, hd, theta)
			e.Out("dx", dx)
		})
	}
}

// rstdOf is 1/sqrt(mean(x²)+eps) per row, in float64, rounded once: the
// backward cases get the same saved rstd on every backend.
func rstdOf(x []float32, rows, C int, eps float64) []float32 {
	r := make([]float32, rows)
	for i := range r {
		var s float64
		for _, v := range x[i*C : i*C+C] {
			s += float64(v) * float64(v)
		}
		r[i] = float32(1 / math.Sqrt(s/float64(C)+eps))
	}
	return r
}

// loss: CrossEntropy with rows of weight 0 (their targets −1, unread),
// a row of huge logits (the max must come out before exp), dlogits
// aliasing logits, and dlogits zero.
func (t *table) loss() {
	for _, s := range [][2]int{{1, 1}, {5, 3}, {5, 7}, {130, 33}, {37, 513}, {64, 32000}, {8, 151936}} {
		rows, V := s[0], s[1]
		name := fmt.Sprintf("%dx%d", rows, V)
		setup := func(e *Env) (kernels.Tensor, []int32, []float32) {
			h := e.Normals(rows*V, 3)
			for j := range V {
				h[j] += 500
			}
			tg := e.Ints(rows, V)
			w := make([]float32, rows)
			for i := range w {
				switch {
				case i%3 == 1:
					tg[i] = -1
				case i%3 == 2:
					w[i] = 1 / float32(rows)
				default:
					w[i] = 0.25
				}
			}
			return e.Load(h), tg, w
		}
		t.sized(rows*V).add("CrossEntropy", F32, false, "CrossEntropy/"+name, func(e *Env) {
			logits, tg, w := setup(e)
			loss, dl := e.In(rows), e.In(rows*V)
			e.Be.CrossEntropy(loss, dl, logits, tg, w, rows, V)
			e.Out("loss", loss)
			e.Out("dlogits", dl)
			e.Out("logits", logits)
		})
		t.sized(rows*V).add("CrossEntropy", F32, false, "CrossEntropy/inplace/"+name, func(e *Env) {
			logits, tg, w := setup(e)
			loss := e.In(rows)
			e.Be.CrossEntropy(loss, logits, logits, tg, w, rows, V)
			e.Out("loss", loss)
			e.Out("dlogits", logits)
		})
		t.sized(rows*V).add("CrossEntropy", F32, false, "CrossEntropy/nograd/"+name, func(e *Env) {
			logits, tg, w := setup(e)
			loss := e.In(rows)
			e.Be.CrossEntropy(loss, kernels.Tensor{}, logits, tg, w, rows, V)
			e.Out("loss", loss)
			e.Out("logits", logits)
		})
	}
}
