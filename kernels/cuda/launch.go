//go:build cuda

package cuda

import (
	_ "embed"
	"fmt"
	"math"
	"unsafe"

	"gorgonia.org/cu"
)

// whalePTX holds every kernel of src/, built by gen.sh.
//
//go:embed whale.ptx
var whalePTX string

// kernelNames lists the entry points of whale.ptx that New resolves.
var kernelNames = []string{
	"whale_to_bf16", "whale_widen_bf16", "whale_add", "whale_scale", "whale_sumsq", "whale_all_finite",
	"whale_bias_add", "whale_colsum_partial", "whale_rmsnorm_dw_partial", "whale_colsum_add",
	"whale_embedding", "whale_embedding_backward", "whale_swiglu", "whale_swiglu_backward", "whale_adamw",
	"whale_cache_write", "whale_rmsnorm", "whale_rmsnorm_backward", "whale_rope", "whale_cross_entropy",
	"whale_gemv_nt_f32", "whale_gemv_nt_bf16", "whale_attn_bwd_d", "whale_attn_kv",
	"whale_attn_fwd_32", "whale_attn_fwd_64", "whale_attn_fwd_128", "whale_attn_fwd_256",
	"whale_attn_bwd_dq_32", "whale_attn_bwd_dq_64", "whale_attn_bwd_dq_128", "whale_attn_bwd_dq_256",
	"whale_attn_bwd_dkdv_32", "whale_attn_bwd_dkdv_64", "whale_attn_bwd_dkdv_128", "whale_attn_bwd_dkdv_256",
	"whale_attn_bwd_d_warp", "whale_attn_bwd_dq_warp_32", "whale_attn_bwd_dq_warp_64", "whale_attn_bwd_dq_warp_128",
	"whale_attn_bwd_dq_warp_256", "whale_attn_bwd_dkdv_warp_32", "whale_attn_bwd_dkdv_warp_64",
	"whale_attn_bwd_dkdv_warp_128", "whale_attn_bwd_dkdv_warp_256",
	"whale_attn_fwd_warp_32", "whale_attn_fwd_warp_64", "whale_attn_fwd_warp_128", "whale_attn_fwd_warp_256",
}

// Launch constants shared with src/ (the same names there).
const (
	threads    = 256     // THREADS: elementwise and reduction blocks
	sumsqChunk = 8192    // SUMSQ_CHUNK
	colChunk   = 64      // COL_CHUNK
	ceThreads  = 512     // CE_THREADS
	gemvMaxM   = 24      // GEMV_MAX_M
	gemvWarps  = 8       // GEMV_WARPS
	attBR      = 64      // ATT_BR
	awWarps    = 8       // AW_WARPS
	awRows     = 32      // AW_ROWS
	kvThreads  = 128     // KV_THREADS (= kernels.KVBlock)
	kvRow      = 9       // KV_ROW
	kvMaxHD    = 256     // the shared vectors of whale_attn_kv
	maxGrid    = 1 << 16 // blocks of a grid-stride launch
)

// dim is a launch shape: grid (x, y, z) blocks of block threads.
type dim struct{ x, y, z, block int }

// elems is the shape of a grid-stride kernel over n elements.
func elems(n int) dim { return dim{max(1, min(maxGrid, (n+threads-1)/threads)), 1, 1, threads} }

// Kernel arguments travel as 8-byte slots (cu.Function.Launch copies 8
// bytes per argument); a 4-byte parameter (float) reads the slot's low
// half, which on a little-endian machine is the value.
// Device addresses (f32, bf16 in memory.go) are slots already.
func i64(n int) uint64      { return uint64(int64(n)) }
func f32a(v float32) uint64 { return uint64(math.Float32bits(v)) }
func f64a(v float64) uint64 { return math.Float64bits(v) }

func flag(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// launch queues kernel name on the stream; op names the Backend op for
// the panic a driver error becomes.
func (b *Backend) launch(op, name string, d dim, args ...uint64) {
	fn, ok := b.fn[name]
	if !ok {
		panic("cuda: no kernel " + name)
	}
	if d.x == 0 || d.y == 0 || d.z == 0 {
		return
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	b.check(op, fn.Launch(d.x, d.y, d.z, d.block, 1, 1, 0, b.stream, params))
}

// check turns a driver error inside an op into a panic naming the op.
func (b *Backend) check(op string, err error) {
	if err != nil {
		panic(fmt.Sprintf("cuda: %s: %v", op, err))
	}
}

// upload copies small host arrays an op takes (tokens, positions, row
// descriptors) to a device block from the pool, on the stream. The host
// bytes are first copied into staged page-locked memory (staging.go),
// kept until the next synchronisation, so the asynchronous copy never
// reads memory Go may reuse and never waits for the stream. The caller
// frees the returned buffer after its launch (stream order keeps it
// valid).
func (b *Backend) upload(op string, data []byte) *buffer {
	buf := b.allocRaw(op, (len(data)+3)/4, 4) // the copy fills it
	if len(data) == 0 {
		return buf
	}
	host := b.stage.put(data)
	b.check(op, cu.MemcpyHtoDAsync(buf.ptr, host, int64(len(data)), b.stream))
	if b.stage.bytes > 64<<20 {
		// Enough staged bytes: wait for the copies and reuse them.
		b.check(op, b.syncLocked())
	}
	return buf
}

// int32s and friends serialise host arrays for upload, little-endian.
func int32s(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func float32s(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func float64s(v []float64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
}

func int64s(v []int64) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 8*len(v))
}
