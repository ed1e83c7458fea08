//go:build cuda

package main

// The cuda tag compiles the CUDA backend in; it registers itself as
// "cuda" for --backend.
import _ "whale/kernels/cuda"
