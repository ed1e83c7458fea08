//go:build !amd64

package kernels

func dot(a, b []float32) float32         { return dotGo(a, b) }
func sumSq(x []float32) float32          { return sumSqGo(x) }
func axpy(alpha float32, x, y []float32) { axpyGo(alpha, x, y) }
func scale(alpha float32, x []float32)   { scaleGo(alpha, x) }
func add(out, a, b []float32)            { addGo(out, a, b) }
