//go:build !amd64

package kernels

func hasAVX2FMA() bool { return false }

func hasAVX512() bool { return false }
