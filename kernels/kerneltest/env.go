package kerneltest

import (
	"math/rand/v2"

	"whale/kernels"
)

// Guard is the value around every view an Env hands out, so that an op
// writing outside its view, or reading outside it into a sum, shows.
const Guard = -3.75

// Pads are the guard widths every backend runs the table at: 64 keeps
// views 256-byte aligned; 5 puts them at an odd element offset, as the
// model's small parameters sit in its arena. A device backend runs the
// odd pass last: a misaligned access may spoil its context.
var Pads = []int{64, 5}

// Env hands a case its tensors and records its outputs. Every tensor is a
// view of pad elements into an allocation of its own, with Guard values on
// both sides; the values come from a seeded stream, so every backend sees
// identical inputs when a case asks for them in the same order.
type Env struct {
	Be   kernels.Backend
	Rng  *rand.Rand
	pad  int
	bufs []guarded
	outs []Output
}

type guarded struct {
	parent kernels.Tensor
	n      int  // elements of the view (which starts at pad)
	bf16   bool // guards are zero and read back through GemmBF16NT
}

// Output is one result of a case, in float64.
type Output struct {
	Name  string
	Exact bool // one right answer: bit-identical whatever the case's tolerance
	Vals  []float64
}

// NewEnv returns an Env on be with guards pad elements wide, its stream
// seeded as every case's is.
func NewEnv(be kernels.Backend, pad int) *Env {
	return &Env{Be: be, Rng: rand.New(rand.NewPCG(1, 2)), pad: pad}
}

// Load returns a view holding h.
func (e *Env) Load(h []float32) kernels.Tensor {
	full := make([]float32, len(h)+2*e.pad)
	for i := range full {
		full[i] = Guard
	}
	copy(full[e.pad:], h)
	p := e.Be.Alloc(len(full))
	e.Be.Load(p, full)
	e.bufs = append(e.bufs, guarded{parent: p, n: len(h)})
	return p.View(e.pad, len(h))
}

// In returns a view of n standard normal values.
func (e *Env) In(n int) kernels.Tensor { return e.Load(e.Normals(n, 1)) }

// Zeros returns a view of n zeros, as Alloc gives.
func (e *Env) Zeros(n int) kernels.Tensor { return e.Load(make([]float32, n)) }

// Pos returns a view of n values in [0.5, 1.5) (second moments, inverse
// RMS).
func (e *Env) Pos(n int) kernels.Tensor {
	h := make([]float32, n)
	for i := range h {
		h[i] = 0.5 + e.Rng.Float32()
	}
	return e.Load(h)
}

// Normals returns n values scale·N(0,1) from the stream.
func (e *Env) Normals(n int, scale float64) []float32 {
	h := make([]float32, n)
	for i := range h {
		h[i] = float32(scale * e.Rng.NormFloat64())
	}
	return h
}

// Ints returns n integers in [0, hi) from the stream.
func (e *Env) Ints(n, hi int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(e.Rng.IntN(hi))
	}
	return r
}

// BF16 returns a zeroed bfloat16 view of n elements.
func (e *Env) BF16(n int) kernels.Tensor {
	p := e.Be.AllocBF16(n + 2*e.pad)
	e.bufs = append(e.bufs, guarded{parent: p, n: n, bf16: true})
	return p.View(e.pad, n)
}

// Out records tensor t (read with Store) as output name.
func (e *Env) Out(name string, t kernels.Tensor) {
	h := make([]float32, t.Len())
	e.Be.Store(h, t)
	e.outs = append(e.outs, Output{Name: name, Vals: widen(h)})
}

// Out64 records t read with Store64 (exact on a float32 backend).
func (e *Env) Out64(name string, t kernels.Tensor) {
	h := make([]float64, t.Len())
	e.Be.Store64(h, t)
	e.outs = append(e.outs, Output{Name: name, Vals: h})
}

// OutBF16 records a bfloat16 tensor, widened exactly; always bit-exact.
func (e *Env) OutBF16(name string, t kernels.Tensor) {
	e.outs = append(e.outs, Output{Name: name, Exact: true, Vals: widen(ReadBF16(e.Be, t))})
}

// Val records host values an op returned (SumSq, AllFinite).
func (e *Env) Val(name string, exact bool, v ...float64) {
	e.outs = append(e.outs, Output{Name: name, Exact: exact, Vals: v})
}

// ReadBF16 widens a bfloat16 tensor through the one product that is exact
// on any backend: GemmBF16NT with m = k = 1 and a = [1] gives out[j] =
// 1·b[j], the bf16 value widened, NaN and Inf included.
func ReadBF16(be kernels.Backend, t kernels.Tensor) []float32 {
	one, out := be.Alloc(1), be.Alloc(t.Len())
	defer func() { be.Free(one); be.Free(out) }()
	be.Load(one, []float32{1})
	be.GemmBF16NT(out, one, t, 1, 1, t.Len(), false)
	h := make([]float32, t.Len())
	be.Store(h, out)
	return h
}

// Finish records the guard elements of every allocation as one exact
// output ("guards"), frees the allocations and returns every output.
func (e *Env) Finish() []Output {
	var g []float64
	for _, b := range e.bufs {
		var h []float32
		if b.bf16 {
			h = ReadBF16(e.Be, b.parent)
		} else {
			h = make([]float32, b.parent.Len())
			e.Be.Store(h, b.parent)
		}
		g = append(g, widen(h[:e.pad])...)
		g = append(g, widen(h[e.pad+b.n:])...)
		e.Be.Free(b.parent)
	}
	e.bufs = nil
	e.outs = append(e.outs, Output{Name: "guards", Exact: true, Vals: g})
	outs := e.outs
	e.outs = nil
	return outs
}

func widen(h []float32) []float64 {
	r := make([]float64, len(h))
	for i, v := range h {
		r[i] = float64(v)
	}
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
