//go:build cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <stdlib.h>
#include <cuda.h>

static int whale_host_alloc(void** p, size_t n) { return (int)cuMemAllocHost(p, n); }
static int whale_host_free(void* p) { return (int)cuMemFreeHost(p); }
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// staging holds the host side of uploads (upload in launch.go) until the
// stream has copied them. A copy from pageable memory may make the driver
// wait for the stream before it returns (it stages such bytes itself), so
// uploads are written into page-locked chunks instead, filled one after
// another and reused from the start after each synchronisation of the
// stream; if page-locked memory cannot be had, a malloc'ed copy (freed at
// the next synchronisation) does as before.
type staging struct {
	chunks []stageChunk
	cur    int // chunk being filled
	used   int // bytes used in chunks[cur]
	bytes  int // bytes staged since the last synchronisation
	heap   []unsafe.Pointer
}

type stageChunk struct {
	p    unsafe.Pointer
	size int
}

// stageChunkBytes is the size of a page-locked chunk (a larger upload gets
// a chunk of its own size).
const stageChunkBytes = 1 << 20

// put copies data into staged host memory and returns its address, valid
// until reset.
func (s *staging) put(data []byte) unsafe.Pointer {
	n := (len(data) + 15) &^ 15 // keep every upload 16-byte aligned
	s.bytes += n
	for ; s.cur < len(s.chunks); s.cur, s.used = s.cur+1, 0 {
		if c := s.chunks[s.cur]; c.size-s.used >= n {
			p := unsafe.Add(c.p, s.used)
			s.used += n
			copy(unsafe.Slice((*byte)(p), len(data)), data)
			return p
		}
	}
	size := max(n, stageChunkBytes)
	var p unsafe.Pointer
	if C.whale_host_alloc(&p, C.size_t(size)) == 0 {
		s.chunks = append(s.chunks, stageChunk{p: p, size: size})
		s.cur, s.used = len(s.chunks)-1, n
	} else {
		p = C.malloc(C.size_t(n))
		if p == nil {
			panic(fmt.Sprintf("cuda: no host memory for an upload of %d bytes", len(data)))
		}
		s.heap = append(s.heap, p)
	}
	copy(unsafe.Slice((*byte)(p), len(data)), data)
	return p
}

// reset makes every chunk free again; the stream has finished every copy
// from them.
func (s *staging) reset() {
	for _, p := range s.heap {
		C.free(p)
	}
	s.heap = s.heap[:0]
	s.cur, s.used, s.bytes = 0, 0, 0
}

// release frees the chunks (at Close, after the last synchronisation).
func (s *staging) release() error {
	s.reset()
	var first error
	for _, c := range s.chunks {
		if st := C.whale_host_free(c.p); st != 0 && first == nil {
			first = fmt.Errorf("cuda: free page-locked host memory: error %d", int(st))
		}
	}
	s.chunks = nil
	return first
}
