package model

import (
	"testing"

	"whale/kernels"
)

// batchedWrites is the CPU backend with kernels.CacheWriter: it counts the
// calls of either kind, and applies a batch one job at a time.
type batchedWrites struct {
	kernels.Backend
	batches, jobs, single int
}

func (b *batchedWrites) CacheWrites(jobs []kernels.CacheWriteJob, KVH, hd int) {
	b.batches++
	b.jobs += len(jobs)
	for _, j := range jobs {
		b.Backend.CacheWrite(j.Cache, j.Src, j.Kind, j.Pos0, j.Rows, KVH, hd, j.Cap)
	}
}

func (b *batchedWrites) CacheWrite(cache, src kernels.Tensor, kind kernels.KVKind, pos0, rows, KVH, hd, cp int) {
	b.single++
	b.Backend.CacheWrite(cache, src, kind, pos0, rows, KVH, hd, cp)
}

// TestSamplerBatchesCacheWrites: on a backend with kernels.CacheWriter the
// sampler hands each layer's cache writes over in one call (two jobs, keys
// and values, per work item) and never calls CacheWrite itself; the
// completions are bit-identical to those of the same model on a backend
// without it, prefix reuse and continuous batching included.
func TestSamplerBatchesCacheWrites(t *testing.T) {
	bw := &batchedWrites{Backend: kernels.NewCPU()}
	batched := tinyModelOn(t, bw)
	plain := tinyModelOn(t, noPack{kernels.NewCPU()})
	reqs := mixedRequests(plain.d.V)
	for _, opts := range []SamplerOptions{{}, {MaxBatch: 3}, {Exact: true}} {
		want := generate(t, NewSampler(plain, opts), reqs...)
		got := generate(t, NewSampler(batched, opts), reqs...)
		for i := range reqs {
			if !sameCompletion(got[i], want[i]) {
				t.Fatalf("%+v: request %d: batched writes %v, one by one %v", opts, i, got[i], want[i])
			}
		}
	}
	if bw.single != 0 {
		t.Errorf("the sampler called CacheWrite %d times beside CacheWrites", bw.single)
	}
	if bw.batches == 0 || bw.batches%batched.d.L != 0 || bw.jobs < 2*bw.batches || bw.jobs%2 != 0 {
		t.Errorf("%d CacheWrites calls with %d jobs for a model of %d layers", bw.batches, bw.jobs, batched.d.L)
	}
}
