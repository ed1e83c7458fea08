//go:build !amd64

package kernels

func adamw(p, g, m, v []float32, k *adamwK) { adamwGo(p, g, m, v, k) }
