//go:build !linux

package kernels

import "unsafe"

// Without Linux's madvise, HugeBF16 and HugeFloat32 fall back to the heap.
func hugeAlloc(size int) unsafe.Pointer { return nil }

func hugeFree(addr uintptr) {}

func adviseHuge(p unsafe.Pointer, size int) {}
