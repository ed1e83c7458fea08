package kernels

import (
	"sync"
	"unsafe"
)

// Batch-1 sampling streams every weight once per token: over 200 MB for a
// 110M-parameter model in bf16. With 4 KB pages that stream takes a TLB miss
// every 4 KB and the hardware prefetcher stops at each page edge; measured
// on the build machine, one thread read 10 GB/s from the Go heap and 23-27
// GB/s from memory backed by 2 MB pages. HugeBF16 and HugeFloat32 give such
// memory for weights that are read far more often than they are allocated.

// hugePage is the size of a transparent huge page on amd64 and most arm64
// kernels.
const hugePage = 2 << 20

// heapHugePages asks the OS to back the whole 2 MB pages inside s (a Go
// heap slice of at least 2 MB) with huge pages, and returns s. The memory
// stays the garbage collector's and its values are untouched; what changes
// is how the pages come back after the runtime returned them to the OS.
// A run allocates its KV caches and training activations (a few MB each,
// thousands a phase) through the backend's Alloc; the runtime hands freed
// spans back to the OS and the next allocation faults them in again, 4 KB
// at a time, and on a virtual machine each fault costs microseconds. On the
// bench workload (whale bench rollouts, searchqa) that was 620-720 thousand
// faults and 10 % of the process's CPU time; with this advice 234-294
// thousand (docs/PERFORMANCE.md). Where the OS has no transparent huge
// pages, or they are off, the advice is refused and nothing changes.
func heapHugePages[E any](s []E) []E {
	if len(s) == 0 {
		return s
	}
	size := len(s) * int(unsafe.Sizeof(s[0]))
	if size >= hugePage {
		adviseHuge(unsafe.Pointer(unsafe.SliceData(s)), size)
	}
	return s
}

// hugeMaps remembers the mappings handed out, by address of their first
// element, so FreeHuge can return them.
var hugeMaps struct {
	sync.Mutex
	m map[uintptr][]byte
}

// HugeBF16 returns n zeroed bf16 elements, backed by 2 MB pages where the OS
// allows (Linux transparent huge pages in "always" or "madvise" mode) and
// by an ordinary Go slice elsewhere or when the mapping fails. The memory
// lives outside the Go heap: it is never collected, so call FreeHuge when
// done with it.
func HugeBF16(n int) []BF16 {
	if p := hugeAlloc(n * 2); p != nil {
		return unsafe.Slice((*BF16)(p), n)
	}
	return make([]BF16, n)
}

// HugeFloat32 is HugeBF16 for float32 elements.
func HugeFloat32(n int) []float32 {
	if p := hugeAlloc(n * 4); p != nil {
		return unsafe.Slice((*float32)(p), n)
	}
	return make([]float32, n)
}

// FreeHuge returns memory from HugeBF16 or HugeFloat32 to the OS. s must
// start where the returned slice started; nothing may use it afterwards.
// Slices that did not come from a mapping (the fallback) are left to the
// garbage collector.
func FreeHuge[T float32 | BF16](s []T) {
	if cap(s) == 0 {
		return
	}
	hugeFree(uintptr(unsafe.Pointer(unsafe.SliceData(s))))
}
