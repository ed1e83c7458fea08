//go:build cuda

package cuda

import (
	"fmt"

	"gorgonia.org/cu"

	"whale/kernels"
)

// Products run through cuBLAS (float32, column-major). A row-major (r,c)
// matrix is the column-major (c,r) matrix of its transpose, so the
// row-major out (m,n) = a·b is the column-major outᵀ (n,m) = bᵀ·aᵀ: we call
// Sgemm with the operands swapped.
//
// Products of fewer than gemvMaxM rows in the NT layout (decoding, and
// every bf16 product of few rows) run instead on whale_gemv_nt, whose
// per-row operations do not depend on m: kernels.RowInvariantRows promises
// callers exactly that, and cuBLAS chooses its kernel by shape.

// Gemm implements kernels.Backend.
func (b *Backend) Gemm(layout kernels.Layout, out, a, c kernels.Tensor, m, k, n int, acc bool) {
	const op = "Gemm"
	if layout != kernels.NN && layout != kernels.NT && layout != kernels.TN {
		panic(fmt.Sprintf("kernels: Gemm: unknown layout %d", int(layout)))
	}
	checkShape(op, m, k, n)
	o, x, y := f32(op, "out", out, m*n), f32(op, "a", a, m*k), f32(op, "b", c, k*n)
	if m == 0 || n == 0 {
		return
	}
	defer b.enter()()
	if b.noProduct(op, o, m, k, n, acc) {
		return
	}
	switch {
	case layout == kernels.NT && m < gemvMaxM:
		b.gemv(op, "whale_gemv_nt_f32", o, x, y, m, k, n, acc)
	case layout == kernels.NN: // outᵀ (n,m) = bᵀ (n,k; ld n) · aᵀ (k,m; ld k)
		b.blas.sgemm(op, false, false, n, m, k, y, n, x, k, acc, o, n)
	case layout == kernels.NT: // outᵀ = b (n,k: its buffer is bᵀ with ld k, transposed) · aᵀ (ld k)
		b.blas.sgemm(op, true, false, n, m, k, y, k, x, k, acc, o, n)
	default: // TN: outᵀ = bᵀ (n,k; ld n) · a (k,m: its buffer is aᵀ with ld m, transposed)
		b.blas.sgemm(op, false, true, n, m, k, y, n, x, m, acc, o, n)
	}
}

// gemv queues whale_gemv_nt_f32 or _bf16 (m < gemvMaxM).
func (b *Backend) gemv(op, kernel string, o, x, y uint64, m, k, n int, acc bool) {
	// whale_gemv_nt_*(float* out, const float* a, const TB* b, i64 m, i64 k, i64 n, i64 acc)
	b.launch(op, kernel, dim{(n + gemvWarps - 1) / gemvWarps, 1, 1, 32 * gemvWarps}, o, x, y, i64(m), i64(k), i64(n), flag(acc))
}

// bf16Panel is the most elements of b one widening step of GemmBF16NT
// holds in float32 (64 MiB of scratch).
const bf16Panel = 16 << 20

// GemmBF16NT implements kernels.Backend. Few rows read the bf16 weights
// directly (whale_gemv_nt_bf16); otherwise panels of b's rows are widened
// to float32 scratch (exactly) and multiplied by cuBLAS, each panel
// writing its own columns of out.
func (b *Backend) GemmBF16NT(out, a, c kernels.Tensor, m, k, n int, acc bool) {
	const op = "GemmBF16NT"
	checkShape(op, m, k, n)
	o, x, y := f32(op, "out", out, m*n), f32(op, "a", a, m*k), bf16(op, "b", c, k*n)
	if m == 0 || n == 0 {
		return
	}
	defer b.enter()()
	if b.noProduct(op, o, m, k, n, acc) {
		return
	}
	if m < gemvMaxM {
		b.gemv(op, "whale_gemv_nt_bf16", o, x, y, m, k, n, acc)
		return
	}
	rows := max(1, min(n, bf16Panel/k)) // rows of b per panel
	scratch := b.alloc(op, rows*k, 4)
	defer b.release(scratch)
	for j0 := 0; j0 < n; j0 += rows {
		nj := min(rows, n-j0)
		// whale_widen_bf16(float* dst, const unsigned short* src, i64 n)
		b.launch(op, "whale_widen_bf16", elems(nj*k), uint64(scratch.ptr), y+uint64(j0*k)*2, i64(nj*k))
		// columns j0.. of out: outᵀ rows j0.. (n,m; ld n) = panel (nj,k) · aᵀ
		b.blas.sgemm(op, true, false, nj, m, k, uint64(scratch.ptr), k, x, k, acc, o+uint64(j0)*4, n)
	}
}

func checkShape(op string, m, k, n int) {
	if m < 0 || k < 0 || n < 0 {
		panic(fmt.Sprintf("kernels: %s: negative shape m=%d k=%d n=%d", op, m, k, n))
	}
}

// noProduct handles k = 0, a product of nothing: out (m,n) is cleared
// unless acc. It reports whether that was the case. The backend is
// entered.
func (b *Backend) noProduct(op string, o uint64, m, k, n int, acc bool) bool {
	if k != 0 {
		return false
	}
	if !acc {
		b.check(op, cu.MemsetD32Async(cu.DevicePtr(o), 0, int64(m*n), b.stream))
	}
	return true
}
