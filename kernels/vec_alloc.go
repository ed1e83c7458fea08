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
