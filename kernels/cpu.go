package kernels

import (
	"fmt"
	"math"
	"sync"
)

// Float is the element type of a CPU backend.
type Float interface{ float32 | float64 }

// CPU is the CPU backend over element type T. CPU[float32] (NewCPU) uses the
// fast float32 kernels; CPU[float64] (NewCPU64) runs generic reference loops
// so the whole model can run in float64 for gradient checks.
type CPU[T Float] struct {
	name string
	gemm func(layout Layout, out, a, b []T, m, k, n int, acc bool)
	// gemm1 is gemm on the calling goroutine, for products inside work
	// already split over threads.
	gemm1 func(layout Layout, out, a, b []T, m, k, n int, acc bool)
	dot   func(a, b []T) T
	axpy  func(alpha T, x, y []T) // y += alpha·x
	add   func(out, a, b []T)     // out = a + b
	// expSub replaces row[i] by e^(row[i]-sub) and returns their sum;
	// sigmoid sets out = 1/(1+e^-x); siluMul sets out = g·sigmoid(g)·u.
	// float32 uses the vector kernels of exp.go.
	expSub  func(row []T, sub T) T
	sigmoid func(out, x []T)
	siluMul func(out, g, u []T)
	// softmax replaces row by softmax(scale·row) and returns the
	// log-sum-exp of scale·row.
	softmax func(row []T, scale T) float64
	// attnDS turns a row of attention scores s into probabilities
	// e^(s·scale − l) and dp into the scores' gradient (p·(dp − d))·scale
	// (AttentionBackward).
	attnDS func(s, dp []T, scale, l, d T)
	// scores, softExp and mix, when set, run decode attention for a chunk
	// of 1, 2 or 4 query heads sharing a KV head in one pass each
	// (attn_decode.go): scores over the first n positions of one head's
	// keys (capacity cap); softExp replaces a row of scores s by
	// e^(scale·s − max) and returns their sum; mix adds the rows'
	// probabilities times the values of n positions into o.
	scores  func(rows int, s []T, lds int, q []T, hd int, k []T, cap, n int)
	softExp func(row []T, scale T) T
	mix     func(rows int, o, pr []T, ldp int, v []T, hd, n int)
	// prefetch, when set, asks the caches for rows rows of n elements, ld
	// apart: decode attention's next unit (prefetchRows).
	prefetch func(p []T, ld, rows, n int)
	// prompt, when set, computes promptTile consecutive rows of a
	// prompt's span against one KV head as matrix products, where
	// promptTiles allows (attn_prompt.go); promptStates recycles its
	// scratch.
	prompt       func(st *promptState[T], o, qs []T, sp KVSpan, s, r0, kh, grp, hd, qw int, k, v, pk, pv []T, scale T)
	promptStates sync.Pool
	// shared, set with prompt, computes the untiled rows of the spans
	// members sharing a prefix cache against one KV head, the prefix as
	// matrix products (attn_shared.go); sharedStates recycles its scratch.
	shared       func(st *sharedState, o, qs []T, spans []KVSpan, members []int32, tile int, ks, vs, pks, pvs [][]T, pk, pv []T, kh, grp, hd, qw int, scale T)
	sharedStates sync.Pool
	// root, set with shared, computes the untiled rows of the spans
	// members sharing a root cache (KVSpan.RK) against one KV head, the
	// root's positions as matrix products (attn_root.go: rootSpanRows).
	root func(st *sharedState, o, qs []T, spans []KVSpan, members []int32, tile int, ks, vs, pks, pvs [][]T, rk, rv []T, kh, grp, hd, qw int, scale T)
	// attnBufs recycles training attention's scratch (getAttnBuf).
	attnBufs sync.Pool
	// decodeBufs and decodeScratch recycle decode attention's slices
	// (getDecodeBuf, getDecodeScratch).
	decodeBufs, decodeScratch sync.Pool
}

// NewCPU returns the float32 CPU backend.
func NewCPU() *CPU[float32] {
	return &CPU[float32]{name: "cpu/float32", gemm: Gemm, gemm1: gemmSerial, dot: Dot, axpy: Axpy, add: add,
		expSub: expSub, sigmoid: sigmoid32, siluMul: siluMul, softmax: opSoftmax32, attnDS: attnDS,
		scores: attnScores, softExp: softExp, mix: attnMix, prefetch: prefetchRows, prompt: promptRows, shared: sharedRows, root: rootSpanRows}
}

// NewCPU64 returns the float64 CPU backend (reference loops).
func NewCPU64() *CPU[float64] {
	return &CPU[float64]{name: "cpu/float64", gemm: GemmRef[float64], gemm1: GemmRef[float64], dot: opDot[float64], axpy: opAxpy[float64], add: opAdd[float64],
		expSub: opExpSub[float64], sigmoid: opSigmoid[float64], siluMul: opSiLUMul[float64], softmax: opSoftmax[float64],
		attnDS: opAttnDS[float64]}
}

// Name implements Backend.
func (c *CPU[T]) Name() string { return c.name }

// s returns the elements of t; it panics if t is not this backend's float
// storage.
func (c *CPU[T]) s(t Tensor) []T {
	b, ok := t.buf.([]T)
	if !ok {
		panic(fmt.Sprintf("kernels: %s got a tensor of storage %T", c.name, t.buf))
	}
	return b[t.off : t.off+t.n : t.off+t.n]
}

// opt returns the elements of t, or nil when t is the zero tensor.
func (c *CPU[T]) opt(t Tensor) []T {
	if t.IsZero() {
		return nil
	}
	return c.s(t)
}

func opBF16s(t Tensor) []uint16 {
	b, ok := t.buf.([]uint16)
	if !ok {
		panic(fmt.Sprintf("kernels: bfloat16 tensor expected, got storage %T", t.buf))
	}
	return b[t.off : t.off+t.n : t.off+t.n]
}

func need(what string, have, want int) {
	if have < want {
		panic(fmt.Sprintf("kernels: %s has %d elements, needs %d", what, have, want))
	}
}

func same(what string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("kernels: %s: lengths %d and %d differ", what, a, b))
	}
}

// Alloc implements Backend. A tensor of 2 MB or more gets its whole 2 MB
// pages of the Go heap advised for huge pages (heapHugePages).
func (c *CPU[T]) Alloc(n int) Tensor { return Tensor{buf: heapHugePages(make([]T, n)), n: n} }

// AllocBF16 implements Backend, with Alloc's advice.
func (c *CPU[T]) AllocBF16(n int) Tensor {
	return Tensor{buf: heapHugePages(make([]uint16, n)), n: n}
}

// Free implements Backend; the garbage collector owns CPU memory.
func (c *CPU[T]) Free(t Tensor) {}

// Load implements Backend.
func (c *CPU[T]) Load(dst Tensor, src []float32) {
	d := c.s(dst)
	same("Load", len(d), len(src))
	for i, v := range src {
		d[i] = T(v)
	}
}

// Store implements Backend.
func (c *CPU[T]) Store(dst []float32, src Tensor) {
	s := c.s(src)
	same("Store", len(dst), len(s))
	for i, v := range s {
		dst[i] = float32(v)
	}
}

// Load64 implements Backend.
func (c *CPU[T]) Load64(dst Tensor, src []float64) {
	d := c.s(dst)
	same("Load64", len(d), len(src))
	for i, v := range src {
		d[i] = T(v)
	}
}

// Store64 implements Backend.
func (c *CPU[T]) Store64(dst []float64, src Tensor) {
	s := c.s(src)
	same("Store64", len(dst), len(s))
	for i, v := range s {
		dst[i] = float64(v)
	}
}

// Fill implements Backend.
func (c *CPU[T]) Fill(dst Tensor, v float32) {
	d := c.s(dst)
	x := T(v)
	if math.Float32bits(v) == 0 {
		// Clearing is most of the calls (gradients); memclr beats the loop,
		// and one core's memclr does not reach the memory's write bandwidth:
		// large tensors are cleared in parallel.
		Parallel(len(d), copyGrain, func(lo, hi int) { clear(d[lo:hi]) })
		return
	}
	Parallel(len(d), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d[i] = x
		}
	})
}

// Copy implements Backend.
func (c *CPU[T]) Copy(dst, src Tensor) {
	d, s := c.s(dst), c.s(src)
	same("Copy", len(d), len(s))
	Parallel(len(d), copyGrain, func(lo, hi int) { copy(d[lo:hi], s[lo:hi]) })
}

// copyGrain is the fewest elements a thread clears or copies: below ~256
// KiB the fork and join costs more than a second core saves.
const copyGrain = 1 << 16

// ToBF16 implements Backend.
func (c *CPU[T]) ToBF16(dst, src Tensor) {
	d, s := opBF16s(dst), c.s(src)
	same("ToBF16", len(d), len(s))
	if f, ok := any(s).([]float32); ok {
		Parallel(len(d), 1<<14, func(lo, hi int) { ToBF16(d[lo:hi], f[lo:hi]) })
		return
	}
	Parallel(len(d), 1<<14, func(lo, hi int) {
		f := make([]float32, hi-lo)
		for i := range f {
			f[i] = float32(s[lo+i])
		}
		ToBF16(d[lo:hi], f)
	})
}

// Gemm implements Backend.
func (c *CPU[T]) Gemm(layout Layout, out, a, b Tensor, m, k, n int, acc bool) {
	o, x, y := c.s(out), c.s(a), c.s(b)
	need("Gemm out", len(o), m*n)
	need("Gemm a", len(x), m*k)
	need("Gemm b", len(y), k*n)
	c.gemm(layout, o[:m*n], x[:m*k], y[:k*n], m, k, n, acc)
}

// GemmBF16NT implements Backend.
func (c *CPU[T]) GemmBF16NT(out, a, b Tensor, m, k, n int, acc bool) {
	o, x, y := c.s(out), c.s(a), opBF16s(b)
	need("GemmBF16NT out", len(o), m*n)
	need("GemmBF16NT a", len(x), m*k)
	need("GemmBF16NT b", len(y), k*n)
	if of, ok := any(o).([]float32); ok {
		GemmBF16NT(of, any(x).([]float32), y, m, k, n, acc)
		return
	}
	GemmBF16NTRef(o, x, y, m, k, n, acc)
}

var (
	_ Backend = (*CPU[float32])(nil)
	_ Backend = (*CPU[float64])(nil)
)
