package kernels

import "fmt"

// Layout says how the operands of Gemm are stored. All matrices are
// row-major and dense.
type Layout int

const (
	// NN: out[m,n] = a[m,k] · b[k,n]       (dY·W in a backward pass)
	NN Layout = iota
	// NT: out[m,n] = a[m,k] · b[n,k]ᵀ      (x·Wᵀ in a forward pass)
	NT
	// TN: out[m,n] = a[k,m]ᵀ · b[k,n]      (dYᵀ·X, weight gradients)
	TN
)

func (l Layout) String() string {
	switch l {
	case NN:
		return "NN"
	case NT:
		return "NT"
	case TN:
		return "TN"
	}
	return "?"
}

// RowInvariantRows is the most rows for which Gemm in the NT layout and
// GemmBF16NT compute every row with exactly the operations they use for
// that row alone (m = 1), whatever k and n: up to this many rows they run
// dot-product tiles, from one more on the packed micro-kernel, whose sums
// are ordered differently (each path on its own is row-invariant, but the
// two differ in the last bits). A caller that needs a row's result not to
// depend on the batch around it, such as a sampler reusing cached prefixes,
// runs its products in blocks of at most this many rows.
const RowInvariantRows = smallMNT - 1

// Gemm computes out = a·b in the given layout, adding to out when
// accumulate is set and overwriting it otherwise. An empty product (k = 0)
// is zero, so out is cleared unless accumulate is set; m = 0 or n = 0 does
// nothing. out must not overlap a or b. It panics if a slice is too short
// for its shape or the layout is unknown (programmer errors).
//
// The work is split over Threads() goroutines along M or N only, never K,
// and which kernel runs depends on the shape alone, so every output element
// is the same sequence of float32 operations whatever the thread count:
// results are bit-identical with 1 or many threads.
func Gemm(layout Layout, out, a, b []float32, m, k, n int, accumulate bool) {
	checkGemm("Gemm", layout, len(out), len(a), len(b), m, k, n)
	if trivialGemm(out, m, k, n, accumulate) {
		return
	}
	gemm(layout, out[:m*n], a[:m*k], b[:k*n], m, k, n, accumulate)
}

// trivialGemm does a product with no work and reports whether that was
// all: nothing for an empty out, out cleared (unless accumulating) for
// k = 0.
func trivialGemm(out []float32, m, k, n int, accumulate bool) bool {
	if m == 0 || n == 0 {
		return true
	}
	if k == 0 {
		if !accumulate {
			clear(out[:m*n])
		}
		return true
	}
	return false
}

func checkGemm(fn string, layout Layout, lout, la, lb, m, k, n int) {
	if layout != NN && layout != NT && layout != TN {
		panic(fmt.Sprintf("kernels: %s: unknown layout %d", fn, int(layout)))
	}
	if m < 0 || k < 0 || n < 0 {
		panic(fmt.Sprintf("kernels: %s: negative shape m=%d k=%d n=%d", fn, m, k, n))
	}
	if lout < m*n || la < m*k || lb < k*n {
		panic(fmt.Sprintf("kernels: %s %v: operand too short for m=%d k=%d n=%d: len(out)=%d (need %d), len(a)=%d (need %d), len(b)=%d (need %d)",
			fn, layout, m, k, n, lout, m*n, la, m*k, lb, k*n))
	}
}
