//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"whale/kernels"
)

func init() {
	kernels.RegisterBackend("cuda", func() (kernels.Backend, error) {
		b, err := New()
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return b, nil
	})
}

// Backend runs kernels.Backend's ops on device 0 in float32. Ops are
// queued on one stream and return before they finish; Load, Store, SumSq,
// AllFinite and Sync wait for it. A Backend may be called from several
// goroutines: every call holds mu and makes the context current on its OS
// thread (a CUDA context is per thread, a goroutine is not).
type Backend struct {
	mu     sync.Mutex
	dev    cu.Device
	ctx    cu.CUContext
	stream cu.Stream
	mod    cu.Module
	fn     map[string]cu.Function
	blas   blasHandle
	pool   *pool
	name   string
	closed bool

	// bf16TC is nil while GemmBF16NT may use cublasGemmEx; the error
	// that made it fall back to Sgemm for good otherwise.
	bf16TC error

	// Host copies of uploaded arrays, reused after the next
	// synchronisation (staging.go).
	stage staging
	// ropeInv holds RoPE's inverse frequencies on the device, uploaded
	// once per (theta, head dim).
	ropeInv map[ropeKey]*buffer
	ropePos ropePos // the positions RoPE read last
	// prof times every op when WHALE_CUDA_PROFILE is set (profile.go).
	prof *profiler

	// Batched cache writes (cachebatch.go): the kernel's module, or nil
	// and batchErr saying why not; the writes queued so far.
	batchMod *cu.Module
	batchErr error
	queue    cacheQueue

	// attnFwdThread and attnBwdThread run Attention's and
	// AttentionBackward's thread-per-row kernels (WHALE_CUDA_ATTN_FWD=thread,
	// WHALE_CUDA_ATTN_BWD=thread) instead of the warp-per-row ones.
	attnFwdThread, attnBwdThread bool
}

var (
	_ kernels.Backend = (*Backend)(nil)
	_ kernels.Syncer  = (*Backend)(nil)
)

// New opens device 0: its primary context, a stream, the embedded kernels
// and a cuBLAS handle.
func New() (*Backend, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: no usable NVIDIA driver: %w", err)
	}
	if n == 0 {
		return nil, errors.New("cuda: the NVIDIA driver sees no GPU")
	}
	b := &Backend{fn: map[string]cu.Function{}, pool: newPool(), ropeInv: map[ropeKey]*buffer{}}
	if b.dev, err = cu.GetDevice(0); err != nil {
		return nil, fmt.Errorf("cuda: device 0: %w", err)
	}
	if b.name, err = b.dev.Name(); err != nil {
		return nil, fmt.Errorf("cuda: device 0 name: %w", err)
	}
	if b.ctx, err = b.dev.RetainPrimaryCtx(); err != nil {
		return nil, fmt.Errorf("cuda: context on %s: %w", b.name, err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := b.open(); err != nil {
		b.dev.ReleasePrimaryCtx()
		return nil, err
	}
	return b, nil
}

// open does New's work inside the context; on an error it undoes its own.
func (b *Backend) open() (err error) {
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		return fmt.Errorf("cuda: make the context current: %w", err)
	}
	if b.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: stream: %w", err)
	}
	if b.mod, err = cu.LoadData(whalePTX); err != nil {
		b.stream.Destroy()
		return fmt.Errorf("cuda: load the kernels (whale.ptx) on %s: %w", b.name, err)
	}
	for _, name := range kernelNames {
		f, err := b.mod.Function(name)
		if err != nil {
			b.mod.Unload()
			b.stream.Destroy()
			return fmt.Errorf("cuda: kernel %s: %w (regenerate whale.ptx with kernels/cuda/gen.sh)", name, err)
		}
		b.fn[name] = f
	}
	if b.blas, err = newBLAS(b.rawStream()); err != nil {
		b.mod.Unload()
		b.stream.Destroy()
		return err
	}
	if v := os.Getenv("WHALE_CUDA_PROFILE"); v != "" && v != "0" {
		b.prof = newProfiler()
	}
	b.attnFwdThread = os.Getenv("WHALE_CUDA_ATTN_FWD") == "thread"
	b.attnBwdThread = os.Getenv("WHALE_CUDA_ATTN_BWD") == "thread"
	b.openCacheBatch()
	// The batch's check ran in a context of its own: make sure this one
	// is current again.
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		b.closeCacheBatch()
		b.blas.destroy()
		b.mod.Unload()
		b.stream.Destroy()
		return fmt.Errorf("cuda: make the context current: %w", err)
	}
	return nil
}

// rawStream is the CUstream handle behind b.stream (cu.Stream wraps just
// that pointer), for cuBLAS.
func (b *Backend) rawStream() uintptr { return *(*uintptr)(unsafe.Pointer(&b.stream)) }

// Close waits for queued work and releases every allocation, the kernels,
// the stream and the context. The Backend must not be used afterwards.
func (b *Backend) Close() error {
	defer b.lock()()
	if b.closed {
		return nil
	}
	b.closed = true
	errs := []error{b.syncLocked(), b.pool.release(), b.blas.destroy(), b.stage.release()}
	if b.prof != nil {
		errs = append(errs, b.prof.release())
	}
	if err := b.mod.Unload(); err != nil {
		errs = append(errs, fmt.Errorf("cuda: unload kernels: %w", err))
	}
	errs = append(errs, b.closeCacheBatch())
	if err := b.stream.Destroy(); err != nil {
		errs = append(errs, fmt.Errorf("cuda: destroy stream: %w", err))
	}
	if err := b.dev.ReleasePrimaryCtx(); err != nil {
		errs = append(errs, fmt.Errorf("cuda: release context: %w", err))
	}
	return errors.Join(errs...)
}

// Sync waits until every op queued so far has finished; it returns the
// first error of an asynchronous launch, if any.
func (b *Backend) Sync() error {
	defer b.enter("Sync")()
	return b.syncLocked()
}

func (b *Backend) syncLocked() error {
	b.flushCacheWrites()
	t0 := time.Now()
	err := b.stream.Synchronize()
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	// Only after a successful wait: the staged bytes' copies, and the
	// profile's events, are then done.
	b.stage.reset()
	if b.prof != nil {
		b.prof.waited(time.Since(t0))
		b.prof.resolve()
	}
	return nil
}

// DeviceName returns the GPU's name as the driver reports it.
func (b *Backend) DeviceName() string { return b.name }

// Name implements kernels.Backend.
func (b *Backend) Name() string { return "cuda/float32" }

// enter locks b and makes its context current on this OS thread for one
// call of op; the returned func undoes it. With profiling on it also
// times the call (see profile.go).
func (b *Backend) enter(op string) func() {
	leave := b.lock()
	if op != "CacheWrite" && len(b.queue.jobs) > 0 {
		// Queued cache writes run before any other op (cachebatch.go);
		// a failed launch panics with the backend unlocked.
		func() {
			defer func() {
				if p := recover(); p != nil {
					leave()
					panic(p)
				}
			}()
			b.flushCacheWrites()
		}()
	}
	if b.prof == nil {
		return leave
	}
	return b.prof.begin(b, op, leave)
}

// lock is enter without the profile: for Close and the profile's own
// calls.
func (b *Backend) lock() func() {
	b.mu.Lock()
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(b.ctx); err != nil {
		runtime.UnlockOSThread()
		b.mu.Unlock()
		panic(fmt.Sprintf("cuda: make the context current: %v", err))
	}
	return func() {
		runtime.UnlockOSThread()
		b.mu.Unlock()
	}
}

// wait is the host edge of an op: the stream drained, errors panicking.
func (b *Backend) wait(op string) { b.check(op, b.syncLocked()) }

// Load implements kernels.Backend.
func (b *Backend) Load(dst kernels.Tensor, src []float32) {
	p := f32("Load", "dst", dst, -1)
	same("Load", dst.Len(), len(src))
	if len(src) == 0 {
		return
	}
	defer b.enter("Load")()
	b.check("Load", cu.MemcpyHtoDAsync(cu.DevicePtr(p), unsafe.Pointer(&src[0]), int64(4*len(src)), b.stream))
	b.wait("Load")
}

// Store implements kernels.Backend.
func (b *Backend) Store(dst []float32, src kernels.Tensor) {
	p := f32("Store", "src", src, -1)
	same("Store", len(dst), src.Len())
	if len(dst) == 0 {
		return
	}
	defer b.enter("Store")()
	b.check("Store", cu.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), cu.DevicePtr(p), int64(4*len(dst)), b.stream))
	b.wait("Store")
}

// Load64 implements kernels.Backend, rounding to float32 on the host.
func (b *Backend) Load64(dst kernels.Tensor, src []float64) {
	same("Load64", dst.Len(), len(src))
	f := make([]float32, len(src))
	for i, v := range src {
		f[i] = float32(v)
	}
	b.Load(dst, f)
}

// Store64 implements kernels.Backend.
func (b *Backend) Store64(dst []float64, src kernels.Tensor) {
	same("Store64", len(dst), src.Len())
	f := make([]float32, len(dst))
	b.Store(f, src)
	for i, v := range f {
		dst[i] = float64(v)
	}
}
