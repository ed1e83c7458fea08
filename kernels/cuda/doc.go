// Package cuda is whale's CUDA backend: a kernels.Backend whose tensors live
// in the memory of one NVIDIA GPU and whose ops run, in order, on one CUDA
// stream. Elementwise ops, norms, attention and the loss are our own
// kernels (src/*.cu, compiled to the embedded whale.ptx by gen.sh, and the
// hand-written cachebatch.ptx); dense products go through cuBLAS.
//
// The backend is compiled only under the cuda build tag (it needs cgo, the
// CUDA headers and libcuda/libcublas); without it this package holds only
// the PTX source check and the text form of the backend's profile. Like every backend it must be deterministic: no
// float atomics, and launch shapes that depend on sizes, never on data.
package cuda
