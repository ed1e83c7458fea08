//go:build cuda

package cuda

import (
	"fmt"
	"math/bits"

	"gorgonia.org/cu"

	"whale/kernels"
)

// buffer is the storage behind a tensor: one device allocation of n
// elements of size bytes each (4 for float32, 2 for bfloat16). Views share
// it with an element offset.
type buffer struct {
	ptr   cu.DevicePtr
	n     int
	esize int
	class int64 // bytes actually allocated (a size class of the pool)
	freed bool
}

// pool is a size-classed caching allocator: freed blocks wait on a free
// list of their class for the next allocation of that class, so the
// model's many short-lived activations do not call cuMemAlloc each time.
// All work runs on one stream, so a block freed after the launches that
// read it and handed out to a later op is only touched after them.
type pool struct {
	free  map[int64][]cu.DevicePtr
	all   map[cu.DevicePtr]int64 // every block the pool owns, for Close
	bytes int64                  // bytes in all
}

func newPool() *pool {
	return &pool{free: map[int64][]cu.DevicePtr{}, all: map[cu.DevicePtr]int64{}}
}

// sizeClass rounds a request up to its class: powers of two up to 1 MiB,
// then steps of an eighth of the power of two at or below (waste under
// 12.5%).
func sizeClass(n int64) int64 {
	if n <= 512 {
		return 512
	}
	p := int64(1) << (63 - bits.LeadingZeros64(uint64(n-1)) + 1) // smallest power of two ≥ n
	if p <= 1<<20 {
		return p
	}
	q := p / 16
	return (n + q - 1) / q * q
}

// get returns a block of class bytes, reusing a freed one if it can. When
// the device is full it syncs, returns every cached block to the driver
// and tries again.
func (p *pool) get(class int64, sync func() error) (cu.DevicePtr, error) {
	if l := p.free[class]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.free[class] = l[:len(l)-1]
		return ptr, nil
	}
	ptr, err := cu.MemAlloc(class)
	if err != nil {
		if serr := sync(); serr != nil {
			return 0, serr
		}
		p.trim()
		if ptr, err = cu.MemAlloc(class); err != nil {
			return 0, fmt.Errorf("cuda: allocate %d bytes (%d held): %w", class, p.bytes, err)
		}
	}
	p.all[ptr] = class
	p.bytes += class
	return ptr, nil
}

func (p *pool) put(ptr cu.DevicePtr, class int64) { p.free[class] = append(p.free[class], ptr) }

// trim returns every cached block to the driver; the caller has synced.
func (p *pool) trim() {
	for class, l := range p.free {
		for _, ptr := range l {
			cu.MemFree(ptr) // best effort: an error only leaves it allocated
			delete(p.all, ptr)
			p.bytes -= class
		}
		delete(p.free, class)
	}
}

// release frees every block, in use or not; the caller has synced.
func (p *pool) release() error {
	var first error
	for ptr := range p.all {
		if err := cu.MemFree(ptr); err != nil && first == nil {
			first = fmt.Errorf("cuda: free: %w", err)
		}
	}
	p.free, p.all, p.bytes = map[int64][]cu.DevicePtr{}, map[cu.DevicePtr]int64{}, 0
	return first
}

// alloc returns a zeroed buffer of n elements of esize bytes.
func (b *Backend) alloc(op string, n, esize int) *buffer {
	buf := b.allocRaw(op, n, esize)
	if n > 0 {
		b.check(op, cu.MemsetD8Async(buf.ptr, 0, int64(n)*int64(esize), b.stream))
	}
	return buf
}

// allocRaw is alloc without the zeroing, for scratch that the next
// launch overwrites entirely (uploads, operands rounded or widened into
// it): one stream operation fewer. Its contents are whatever the block
// held before.
func (b *Backend) allocRaw(op string, n, esize int) *buffer {
	if n < 0 {
		panic(fmt.Sprintf("cuda: %s of %d elements", op, n))
	}
	class := sizeClass(int64(n) * int64(esize))
	ptr, err := b.pool.get(class, b.syncLocked)
	if err != nil {
		panic(fmt.Sprintf("cuda: %s: %v", op, err))
	}
	return &buffer{ptr: ptr, n: n, esize: esize, class: class}
}

// release hands a buffer back to the pool.
func (b *Backend) release(buf *buffer) {
	if buf.freed {
		panic("cuda: Free of a tensor already freed")
	}
	buf.freed = true
	b.pool.put(buf.ptr, buf.class)
}

// Alloc implements kernels.Backend.
func (b *Backend) Alloc(n int) kernels.Tensor {
	defer b.enter("Alloc")()
	return kernels.MakeTensor(b.alloc("Alloc", n, 4), 0, n)
}

// AllocBF16 implements kernels.Backend.
func (b *Backend) AllocBF16(n int) kernels.Tensor {
	defer b.enter("AllocBF16")()
	return kernels.MakeTensor(b.alloc("AllocBF16", n, 2), 0, n)
}

// Free implements kernels.Backend: the allocation goes back to the pool.
func (b *Backend) Free(t kernels.Tensor) {
	if t.IsZero() {
		return
	}
	buf, off := storage(t)
	if off != 0 || t.Len() != buf.n {
		panic(fmt.Sprintf("cuda: Free of a view [%d:%d] of an allocation of %d elements", off, off+t.Len(), buf.n))
	}
	defer b.enter("Free")()
	b.release(buf)
}

// storage returns t's buffer and offset; it panics if t is not a tensor of
// this backend.
func storage(t kernels.Tensor) (*buffer, int) {
	s, off := t.Storage()
	buf, ok := s.(*buffer)
	if !ok {
		panic(fmt.Sprintf("cuda: got a tensor of storage %T, not a CUDA one", s))
	}
	if buf.freed {
		panic("cuda: use of a freed tensor")
	}
	return buf, off
}

// f32 returns the device address of float32 tensor t, checking it holds at
// least want elements (want < 0: any length).
func f32(op, what string, t kernels.Tensor, want int) uint64 {
	buf, off := storage(t)
	if buf.esize != 4 {
		panic(fmt.Sprintf("cuda: %s %s: a bfloat16 tensor where float32 is needed", op, what))
	}
	if want >= 0 && t.Len() < want {
		panic(fmt.Sprintf("kernels: %s %s has %d elements, needs %d", op, what, t.Len(), want))
	}
	return uint64(buf.ptr) + uint64(off)*4
}

// optF32 is f32 for an output that may be the zero tensor (0: skip).
func optF32(op, what string, t kernels.Tensor, want int) uint64 {
	if t.IsZero() {
		return 0
	}
	return f32(op, what, t, want)
}

// bf16 is f32 for a bfloat16 tensor.
func bf16(op, what string, t kernels.Tensor, want int) uint64 {
	buf, off := storage(t)
	if buf.esize != 2 {
		panic(fmt.Sprintf("cuda: %s %s: a float32 tensor where bfloat16 is needed", op, what))
	}
	if want >= 0 && t.Len() < want {
		panic(fmt.Sprintf("kernels: %s %s has %d elements, needs %d", op, what, t.Len(), want))
	}
	return uint64(buf.ptr) + uint64(off)*2
}

func same(op string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("kernels: %s: lengths %d and %d differ", op, a, b))
	}
}
