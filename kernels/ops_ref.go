package kernels

// Generic pure-Go reference loops used by the float64 CPU backend (and by
// the float32 one where no fast kernel exists yet). Every loop computes each
// output element by one fixed sequence of operations, so results do not
// depend on how Parallel splits the work.

// opDot returns Σ a[i]·b[i], summed left to right.
func opDot[T Float](a, b []T) T {
	b = b[:len(a)]
	var s T
	for i, x := range a {
		s += x * b[i]
	}
	return s
}

// opAxpy sets y[i] += alpha·x[i].
func opAxpy[T Float](alpha T, x, y []T) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// opGemm is the reference Gemm (see Gemm for the layouts), parallel over
// rows of out. Each out[i,j] is summed over p in increasing order, so a row's
// result does not depend on m or on the other rows.
func opGemm[T Float](layout Layout, out, a, b []T, m, k, n int, acc bool) {
	need("gemm out", len(out), m*n)
	need("gemm a", len(a), m*k)
	need("gemm b", len(b), k*n)
	grain := 1 + (1<<15)/(1+k*n)
	Parallel(m, grain, func(lo, hi int) {
		row := make([]T, n)
		for i := lo; i < hi; i++ {
			o := out[i*n : i*n+n]
			switch layout {
			case NN:
				clear(row)
				for p := 0; p < k; p++ {
					opAxpy(a[i*k+p], b[p*n:p*n+n], row)
				}
			case NT:
				ai := a[i*k : i*k+k]
				for j := 0; j < n; j++ {
					row[j] = opDot(ai, b[j*k:j*k+k])
				}
			case TN:
				clear(row)
				for p := 0; p < k; p++ {
					opAxpy(a[p*m+i], b[p*n:p*n+n], row)
				}
			default:
				panic("kernels: unknown layout")
			}
			if acc {
				for j := range o {
					o[j] += row[j]
				}
			} else {
				copy(o, row)
			}
		}
	})
}

// opGemmBF16NT is Gemm NT with b (n,k) in bfloat16, in element type T.
func opGemmBF16NT[T Float](out, a []T, b []uint16, m, k, n int, acc bool) {
	Parallel(n, 1+(1<<14)/(1+k*m), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			bj := b[j*k : j*k+k]
			for i := 0; i < m; i++ {
				ai := a[i*k : i*k+k]
				var s T
				for p, w := range bj {
					s += ai[p] * T(opBF16Value(w))
				}
				if acc {
					out[i*n+j] += s
				} else {
					out[i*n+j] = s
				}
			}
		}
	})
}

// opGemmBF16NT32 is the float32 bfloat16 GEMM the float32 backend calls.
func opGemmBF16NT32(out, a []float32, b []uint16, m, k, n int, acc bool) {
	opGemmBF16NT(out, a, b, m, k, n, acc)
}
