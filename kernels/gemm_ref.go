package kernels

// GemmRef is the plain triple-loop reference of Gemm, generic so that a
// float64 instance can check gradients and the float32 kernels. Each output
// element is one sum over p in increasing order, accumulated in T. It has the
// same contract as Gemm (k = 0 clears out unless accumulate).
func GemmRef[T float32 | float64](layout Layout, out, a, b []T, m, k, n int, accumulate bool) {
	checkGemm("GemmRef", layout, len(out), len(a), len(b), m, k, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s T
			for p := 0; p < k; p++ {
				var x, y T
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
