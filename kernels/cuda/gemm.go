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
	defer b.enter(op)()
	if b.prof != nil {
		b.note("%s %dx%dx%d", layout, m, k, n)
	}
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

// bf16Panel is the most elements of b one widening step of GemmBF16NT's
// fallback holds in float32 (64 MiB of scratch).
const bf16Panel = 16 << 20

// GemmBF16NT implements kernels.Backend. Few rows read the bf16 weights
// directly (whale_gemv_nt_bf16, float32 activations: the sampler's
// decoding rows and its exact mode). From gemvMaxM rows on, a is rounded
// to bfloat16 into scratch and the product runs on the tensor cores
// (cublasGemmEx, bf16 × bf16 summed in float32, as torch.matmul does in
// bf16); where cuBLAS refuses that (no cublasGemmEx, a GPU before Ampere)
// the backend falls back for good to widening panels of b to float32 and
// Sgemm, which keeps a in float32.
//
// Rounding a is the one difference from the CPU backend (which keeps a in
// float32) and it stays well inside the device check's bf16 tolerance
// (normalised error ≤ 1e-2): each a_i becomes a_i(1+δ_i) with |δ_i| ≤ 2⁻⁹,
// so an output's error is Σ_i a_i·w_i·δ_i. The δ_i of different elements
// are independent, a random walk: its size is about 2⁻⁹/√3 ≈ 1.1e-3 of
// √Σ(a_i·w_i)², which for inputs of random sign is the output's own
// scale, whatever K (up to 4096 at the model's shapes). Over many outputs
// the largest error and the largest output both sit a few of their
// standard deviations out, so the normalised error is ~1.5e-3, a sixth of
// the tolerance. Only if every rounding pushed the same way would it grow
// with √K (2⁻⁹·(2/π)·√K: 0.08 of an output's scale at K = 4096), and
// round-to-nearest of unrelated values does not do that.
func (b *Backend) GemmBF16NT(out, a, c kernels.Tensor, m, k, n int, acc bool) {
	const op = "GemmBF16NT"
	checkShape(op, m, k, n)
	o, x, y := f32(op, "out", out, m*n), f32(op, "a", a, m*k), bf16(op, "b", c, k*n)
	if m == 0 || n == 0 {
		return
	}
	defer b.enter(op)()
	if b.noProduct(op, o, m, k, n, acc) {
		return
	}
	if m < gemvMaxM {
		if b.prof != nil {
			b.note("NT %dx%dx%d gemv", m, k, n)
		}
		b.gemv(op, "whale_gemv_nt_bf16", o, x, y, m, k, n, acc)
		return
	}
	if b.bf16TC == nil && b.gemmBF16TC(op, o, x, y, m, k, n, acc) {
		if b.prof != nil {
			b.note("NT %dx%dx%d tensor cores", m, k, n)
		}
		return
	}
	if b.prof != nil {
		b.note("NT %dx%dx%d widened", m, k, n)
	}
	rows := max(1, min(n, bf16Panel/k)) // rows of b per panel
	scratch := b.allocRaw(op, rows*k, 4)
	defer b.release(scratch)
	for j0 := 0; j0 < n; j0 += rows {
		nj := min(rows, n-j0)
		// whale_widen_bf16(float* dst, const unsigned short* src, i64 n)
		b.launch(op, "whale_widen_bf16", elems(nj*k), uint64(scratch.ptr), y+uint64(j0*k)*2, i64(nj*k))
		// columns j0.. of out: outᵀ rows j0.. (n,m; ld n) = panel (nj,k) · aᵀ
		b.blas.sgemm(op, true, false, nj, m, k, uint64(scratch.ptr), k, x, k, acc, o+uint64(j0)*4, n)
	}
}

// gemmBF16TC is GemmBF16NT on the tensor cores: a rounded to bfloat16
// (whale_to_bf16, the rounding of ToBF16) into pooled scratch, then
// outᵀ (n,m; ld n) = b (n,k: its buffer is bᵀ with ld k, transposed) ·
// aᵀ (ld k). It reports false, with b.bf16TC set to why, when cuBLAS
// refuses; nothing has been written to out then.
func (b *Backend) gemmBF16TC(op string, o, x, y uint64, m, k, n int, acc bool) bool {
	ab := b.allocRaw(op, m*k, 2)
	defer b.release(ab)
	// whale_to_bf16(unsigned short* dst, const float* src, i64 n)
	b.launch(op, "whale_to_bf16", elems(m*k), uint64(ab.ptr), x, i64(m*k))
	if err := b.blas.gemmBF16(true, false, n, m, k, y, k, uint64(ab.ptr), k, acc, o, n); err != nil {
		b.bf16TC = err
		return false
	}
	return true
}

// BF16TensorCores reports whether GemmBF16NT's products of gemvMaxM rows
// or more run on the tensor cores (a rounded to bfloat16), and if not,
// the error that turned them off.
func (b *Backend) BF16TensorCores() (bool, error) {
	defer b.lock()()
	return b.bf16TC == nil, b.bf16TC
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
