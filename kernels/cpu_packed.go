package kernels

import "fmt"

// PackedNT is an optional Backend capability: storing the right operand of
// NT products (x·Wᵀ, a model's weights while it samples) once in the
// backend's preferred layout, so every later product skips re-arranging it.
// Products on packed weights give each row the same bits whatever the other
// rows of the call, at every m: a sampler using them is exact
// (batch-composition independent) without running in small row blocks.
type PackedNT interface {
	// PackedLen returns how many elements the packed form of a w (n,k)
	// takes; 0 when the backend cannot pack.
	PackedLen(k, n int) int
	// AllocPacked returns a zeroed allocation of n packed elements, in
	// bfloat16 when bf16 is set (rounded to nearest even when packed).
	// Views of it at multiples of PackedLen sizes hold packed matrices.
	// Release it with FreePacked.
	AllocPacked(n int, bf16 bool) Tensor
	// PackNT stores w (n,k), a float tensor of this backend, into dst, a
	// view of PackedLen(k, n) elements of an AllocPacked tensor.
	PackNT(dst, w Tensor, k, n int)
	// GemmPackedNT computes out (m,n) (+)= a (m,k) · wᵀ with w packed by
	// PackNT into p. A row's result depends only on that row of a and on
	// w, and not on where w's rows sit: of a w packed whole, the view of
	// PackedLen(k, j) elements at offset PackedLen(k, j0), j0 a multiple
	// of 64 and j a multiple of 64 or j0+j = n, is the packed form of w's
	// rows j0..j0+j-1 alone.
	GemmPackedNT(out, a, p Tensor, m, k, n int, acc bool)
	// FreePacked releases a tensor from AllocPacked.
	FreePacked(p Tensor)
}

// Packed weights keep their own storage types so that a packed tensor can
// never be passed to an op expecting plain elements (c.s panics on it).
type (
	packedF32  []float32
	packedBF16 []BF16
)

// hugeMin is the smallest packed allocation put in huge-page memory; a
// smaller one would waste most of a 2 MB page and is cache-resident anyway.
const hugeMin = 4 << 20

// PackedLen implements PackedNT: the float64 backend cannot pack.
func (c *CPU[T]) PackedLen(k, n int) int {
	var z T
	if _, ok := any(z).(float32); !ok {
		return 0
	}
	return PackedNTLen(k, n)
}

// AllocPacked implements PackedNT; large allocations are backed by huge
// pages (a decoding step streams all of it).
func (c *CPU[T]) AllocPacked(n int, bf16 bool) Tensor {
	if bf16 {
		if 2*n < hugeMin {
			return Tensor{buf: packedBF16(make([]BF16, n)), n: n}
		}
		return Tensor{buf: packedBF16(HugeBF16(n)), n: n}
	}
	if 4*n < hugeMin {
		return Tensor{buf: packedF32(make([]float32, n)), n: n}
	}
	return Tensor{buf: packedF32(HugeFloat32(n)), n: n}
}

// PackNT implements PackedNT.
func (c *CPU[T]) PackNT(dst, w Tensor, k, n int) {
	src, ok := any(c.s(w)).([]float32)
	if !ok {
		panic(fmt.Sprintf("kernels: PackNT on %s", c.name))
	}
	need("PackNT w", len(src), k*n)
	switch b := dst.buf.(type) {
	case packedF32:
		PackNT(b[dst.off:dst.off+dst.n], src[:k*n], k, n)
	case packedBF16:
		PackNTBF16(b[dst.off:dst.off+dst.n], src[:k*n], k, n)
	default:
		panic(fmt.Sprintf("kernels: PackNT into a tensor of storage %T, not from AllocPacked", dst.buf))
	}
}

// GemmPackedNT implements PackedNT.
func (c *CPU[T]) GemmPackedNT(out, a, p Tensor, m, k, n int, acc bool) {
	o, ok1 := any(c.s(out)).([]float32)
	x, ok2 := any(c.s(a)).([]float32)
	if !ok1 || !ok2 {
		panic(fmt.Sprintf("kernels: GemmPackedNT on %s", c.name))
	}
	need("GemmPackedNT out", len(o), m*n)
	need("GemmPackedNT a", len(x), m*k)
	switch b := p.buf.(type) {
	case packedF32:
		GemmPackedNT(o, x, b[p.off:p.off+p.n], m, k, n, acc)
	case packedBF16:
		GemmPackedNTBF16(o, x, b[p.off:p.off+p.n], m, k, n, acc)
	default:
		panic(fmt.Sprintf("kernels: GemmPackedNT on a tensor of storage %T, not from AllocPacked", p.buf))
	}
}

// FreePacked implements PackedNT; ordinary heap memory is left to the
// garbage collector.
func (c *CPU[T]) FreePacked(p Tensor) {
	switch b := p.buf.(type) {
	case packedF32:
		FreeHuge([]float32(b))
	case packedBF16:
		FreeHuge([]BF16(b))
	}
}

var _ PackedNT = (*CPU[float32])(nil)
