package kernels

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugeAlloc maps size bytes (rounded up to whole 2 MB pages) and asks for
// huge pages before anything touches them, so that the first faults map
// 2 MB at a time. It returns nil when it cannot map.
func hugeAlloc(size int) unsafe.Pointer {
	if size <= 0 {
		return nil
	}
	size = (size + hugePage - 1) &^ (hugePage - 1)
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	// An OS without transparent huge pages refuses the advice; the memory
	// still works with small pages.
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	p := unsafe.Pointer(unsafe.SliceData(mem))
	hugeMaps.Lock()
	if hugeMaps.m == nil {
		hugeMaps.m = make(map[uintptr][]byte)
	}
	hugeMaps.m[uintptr(p)] = mem
	hugeMaps.Unlock()
	return p
}

// adviseHuge advises the whole 2 MB pages within size bytes at p for
// transparent huge pages (madvise MADV_HUGEPAGE); an OS that refuses the
// advice keeps small pages.
func adviseHuge(p unsafe.Pointer, size int) {
	addr := uintptr(p)
	lo := (addr + hugePage - 1) &^ (hugePage - 1)
	hi := (addr + uintptr(size)) &^ (hugePage - 1)
	if hi <= lo {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, lo-addr)), hi-lo), unix.MADV_HUGEPAGE)
}

func hugeFree(addr uintptr) {
	hugeMaps.Lock()
	mem, ok := hugeMaps.m[addr]
	delete(hugeMaps.m, addr)
	hugeMaps.Unlock()
	if ok {
		_ = unix.Munmap(mem)
	}
}
