package kernels

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

// Gemm computes out = a·b in the given layout, adding to out when
// accumulate is set and overwriting it otherwise. It panics if a slice is
// too short for its shape (a programmer error).
//
// TEMPORARY pure-Go body: the fast, parallel version replaces it.
func Gemm(layout Layout, out, a, b []float32, m, k, n int, accumulate bool) {
	if len(out) < m*n || len(a) < m*k || len(b) < k*n {
		panic("kernels: Gemm operand too short for its shape")
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float32
			for p := 0; p < k; p++ {
				var x, y float32
				switch layout {
				case NN:
					x, y = a[i*k+p], b[p*n+j]
				case NT:
					x, y = a[i*k+p], b[j*k+p]
				case TN:
					x, y = a[p*m+i], b[p*n+j]
				}
				s += x * y
			}
			if accumulate {
				out[i*n+j] += s
			} else {
				out[i*n+j] = s
			}
		}
	}
}
