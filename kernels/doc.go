// Package kernels holds the numeric kernels whale's transformer runs on and
// the Backend interface the model calls. The CPU backend works on []float32;
// every fast kernel (Go assembly on amd64, chosen at run time from CPU
// features) has a pure-Go reference twin that it is tested against. The
// op table every backend runs against the float64 reference lives in
// kernels/kerneltest; timing (the machine's bounds, GEMM speeds) in
// kernels/bench.
//
// The package must never know about a model, a tokenizer or a harness.
package kernels
