//go:build cuda

package cuda

// A small cgo shim over cuBLAS. gorgonia.org/cu/blas takes Go slices (host
// memory) and has no handle-per-stream control, and our operands are
// device pointers that must be queued on the backend's stream; calling
// cublasSgemm_v2 directly keeps every product on that stream, with device
// pointers passed as integers (no Go pointer ever reaches C).
//
// cuBLAS is opened at run time (dlopen), newest first: its soname carries
// its major version (libcublas.so.11 in CUDA 11, .12, .13), and a binary
// linked against one would not start where another is installed — the
// build machine's headers are CUDA 11.8's, a GPU machine's toolkit or
// PyTorch wheels may bring 12 or 13. The few entry points used have kept
// their signatures across those versions.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stddef.h>
#include <cublas_v2.h>

typedef cublasStatus_t (*whale_create_fn)(cublasHandle_t*);
typedef cublasStatus_t (*whale_destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*whale_set_stream_fn)(cublasHandle_t, cudaStream_t);
typedef cublasStatus_t (*whale_set_math_fn)(cublasHandle_t, cublasMath_t);
typedef cublasStatus_t (*whale_set_atomics_fn)(cublasHandle_t, cublasAtomicsMode_t);
typedef cublasStatus_t (*whale_sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                         const float*, const float*, int, const float*, int, const float*, float*, int);
typedef cublasStatus_t (*whale_gemmex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                          const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                          const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

static void* whale_blas_lib;
static const char* whale_blas_name;
static whale_create_fn whale_p_create;
static whale_destroy_fn whale_p_destroy;
static whale_set_stream_fn whale_p_set_stream;
static whale_set_math_fn whale_p_set_math;
static whale_set_atomics_fn whale_p_set_atomics;
static whale_sgemm_fn whale_p_sgemm;
static whale_gemmex_fn whale_p_gemmex; // optional: NULL leaves bf16 products on Sgemm

// whale_blas_open loads cuBLAS once: 0 on success, -1 when no libcublas
// is found, -2 when one lacks an entry point.
static int whale_blas_open(void) {
	static const char* names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so", NULL};
	if (whale_blas_lib) return 0;
	void* lib = NULL;
	int i;
	for (i = 0; names[i] && !lib; i++) {
		lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (lib) whale_blas_name = names[i];
	}
	if (!lib) return -1;
	whale_p_create = (whale_create_fn)dlsym(lib, "cublasCreate_v2");
	whale_p_destroy = (whale_destroy_fn)dlsym(lib, "cublasDestroy_v2");
	whale_p_set_stream = (whale_set_stream_fn)dlsym(lib, "cublasSetStream_v2");
	whale_p_set_math = (whale_set_math_fn)dlsym(lib, "cublasSetMathMode");
	whale_p_set_atomics = (whale_set_atomics_fn)dlsym(lib, "cublasSetAtomicsMode");
	whale_p_sgemm = (whale_sgemm_fn)dlsym(lib, "cublasSgemm_v2");
	whale_p_gemmex = (whale_gemmex_fn)dlsym(lib, "cublasGemmEx");
	if (!whale_p_create || !whale_p_destroy || !whale_p_set_stream || !whale_p_set_math || !whale_p_set_atomics || !whale_p_sgemm) {
		dlclose(lib);
		return -2;
	}
	whale_blas_lib = lib;
	return 0;
}

static const char* whale_blas_lib_name(void) { return whale_blas_name ? whale_blas_name : ""; }

static int whale_blas_create(uintptr_t* h, uintptr_t stream) {
	cublasHandle_t handle;
	cublasStatus_t st = whale_p_create(&handle);
	if (st != CUBLAS_STATUS_SUCCESS) return (int)st;
	st = whale_p_set_stream(handle, (cudaStream_t)stream);
	if (st == CUBLAS_STATUS_SUCCESS) {
		// Plain float32 arithmetic (no TF32 tensor cores): the backend is
		// checked against the CPU to float32 tolerances. No atomics, so
		// products are deterministic.
		st = whale_p_set_math(handle, CUBLAS_DEFAULT_MATH);
	}
	if (st == CUBLAS_STATUS_SUCCESS) st = whale_p_set_atomics(handle, CUBLAS_ATOMICS_NOT_ALLOWED);
	if (st != CUBLAS_STATUS_SUCCESS) {
		whale_p_destroy(handle);
		return (int)st;
	}
	*h = (uintptr_t)handle;
	return 0;
}

static int whale_blas_destroy(uintptr_t h) { return (int)whale_p_destroy((cublasHandle_t)h); }

// Column-major C (m,n) = alpha·op(A)·op(B) + beta·C.
static int whale_sgemm(uintptr_t h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda,
                       uintptr_t b, int ldb, float beta, uintptr_t c, int ldc) {
	return (int)whale_p_sgemm((cublasHandle_t)h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
	                          m, n, k, &alpha, (const float*)a, lda, (const float*)b, ldb, &beta, (float*)c, ldc);
}

// Column-major C (m,n) = op(A)·op(B) + beta·C with A and B bfloat16 and C
// float32, summed in float32 (CUBLAS_COMPUTE_32F: tensor cores on Ampere
// and later). -1 when this cuBLAS has no cublasGemmEx.
static int whale_gemm_bf16(uintptr_t h, int ta, int tb, int m, int n, int k, uintptr_t a, int lda, uintptr_t b,
                           int ldb, float beta, uintptr_t c, int ldc) {
	float alpha = 1;
	if (!whale_p_gemmex) return -1;
	return (int)whale_p_gemmex((cublasHandle_t)h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
	                           &alpha, (const void*)a, CUDA_R_16BF, lda, (const void*)b, CUDA_R_16BF, ldb, &beta,
	                           (void*)c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}
*/
import "C"

import (
	"fmt"
	"math"
)

// blasHandle is a cuBLAS handle bound to one stream.
type blasHandle C.uintptr_t

func newBLAS(stream uintptr) (blasHandle, error) {
	switch C.whale_blas_open() {
	case -1:
		return 0, fmt.Errorf("cuda: cuBLAS not found: no libcublas.so.13, .12 or .11 on the library path (set LD_LIBRARY_PATH to the CUDA toolkit's lib64, or to PyTorch's nvidia/cublas/lib)")
	case -2:
		return 0, fmt.Errorf("cuda: %s lacks an entry point whale calls (cublasCreate_v2, cublasSgemm_v2, ...)", C.GoString(C.whale_blas_lib_name()))
	}
	var h C.uintptr_t
	if st := C.whale_blas_create(&h, C.uintptr_t(stream)); st != 0 {
		return 0, fmt.Errorf("cuda: cuBLAS handle (%s): status %d", C.GoString(C.whale_blas_lib_name()), int(st))
	}
	return blasHandle(h), nil
}

func (h blasHandle) destroy() error {
	if st := C.whale_blas_destroy(C.uintptr_t(h)); st != 0 {
		return fmt.Errorf("cuda: cuBLAS destroy: status %d", int(st))
	}
	return nil
}

// sgemm queues column-major c (m,n) = op(a)·op(b) (+ c when acc); ta, tb
// transpose a and b. Sizes and leading dimensions must fit an int32.
func (h blasHandle) sgemm(op string, ta, tb bool, m, n, k int, a uint64, lda int, b uint64, ldb int, acc bool, c uint64, ldc int) {
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			panic(fmt.Sprintf("cuda: %s: size %d does not fit cuBLAS's int", op, v))
		}
	}
	var beta float32
	if acc {
		beta = 1
	}
	st := C.whale_sgemm(C.uintptr_t(h), cbool(ta), cbool(tb), C.int(m), C.int(n), C.int(k), 1,
		C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc))
	if st != 0 {
		panic(fmt.Sprintf("cuda: %s: cublasSgemm: status %d", op, int(st)))
	}
}

// gemmBF16 queues column-major c (m,n) = op(a)·op(b) (+ c when acc) with
// a and b bfloat16 and c float32 through cublasGemmEx. Unlike sgemm it
// returns an error instead of panicking: the caller then computes the
// product another way (cuBLAS refuses bf16 on GPUs before Ampere, and a
// cuBLAS without cublasGemmEx has no such call at all).
func (h blasHandle) gemmBF16(ta, tb bool, m, n, k int, a uint64, lda int, b uint64, ldb int, acc bool, c uint64, ldc int) error {
	for _, v := range []int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			return fmt.Errorf("cuda: size %d does not fit cuBLAS's int", v)
		}
	}
	var beta float32
	if acc {
		beta = 1
	}
	st := C.whale_gemm_bf16(C.uintptr_t(h), cbool(ta), cbool(tb), C.int(m), C.int(n), C.int(k),
		C.uintptr_t(a), C.int(lda), C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc))
	switch st {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("cuda: %s has no cublasGemmEx", C.GoString(C.whale_blas_lib_name()))
	}
	return fmt.Errorf("cuda: cublasGemmEx (bf16, %s): status %d", C.GoString(C.whale_blas_lib_name()), int(st))
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}
