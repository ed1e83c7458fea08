// Package kerneltest holds the one table of op cases that every
// kernels.Backend runs against the pure-Go reference (the float64 CPU
// backend), as ggml's test-backend-ops does: each case names an op, its
// shapes and its element type (float32, or bfloat16 where an operand is),
// and a tolerance table says per op and element type how far a correct
// backend may be from the reference. The CPU backend's tests run it
// (kernels/optable_test.go); the CUDA backend's device check runs the same
// table (kernels/cuda/device_test.go).
//
// Every input comes from one seeded stream and every tensor sits between
// guard values, so a write or a read outside a view shows. The package
// imports kernels and nothing else of ours; it must never hold a
// backend-specific case.
package kerneltest
