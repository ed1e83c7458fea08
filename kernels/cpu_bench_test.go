package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchAttentionKV times one decode step of attention for rows sequences
// at position pos with bench-small's heads (8 query, 2 KV, head dim 32).
func benchAttentionKV(b *testing.B, rows, pos int) { benchAttentionKVHeads(b, rows, pos, 8, 2, 32) }

// benchAttentionKVHeads is benchAttentionKV for H query heads sharing KVH
// KV heads of dimension hd.
func benchAttentionKVHeads(b *testing.B, rows, pos, H, KVH, hd int) {
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	cap := (pos + KVCapGranule) / KVCapGranule * KVCapGranule // as the sampler sizes them: a multiple of the granule past pos
	var spans []KVSpan
	for s := 0; s < rows; s++ {
		kc, vc := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
		be.CacheWrite(kc, e.in(cap*KVH*hd), Keys, 0, cap, KVH, hd, cap)
		be.CacheWrite(vc, e.in(cap*KVH*hd), Values, 0, cap, KVH, hd, cap)
		spans = append(spans, KVSpan{K: kc, V: vc, Cap: cap, QRow: s, Rows: 1, Pos0: pos})
	}
	q, out := e.in(rows*H*hd), be.Alloc(rows*H*hd)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		be.AttentionKV(out, q, spans, H, KVH, hd)
	}
}

func BenchmarkCPUAttentionKVDecodeB1(b *testing.B)  { benchAttentionKV(b, 1, 150) }
func BenchmarkCPUAttentionKVDecodeB64(b *testing.B) { benchAttentionKV(b, 64, 150) }

// The embedded base model's heads (8 query, 4 KV: pairs) deep into a
// harness prompt, and the 110M shape's (12 query, 12 KV: no sharing).
func BenchmarkCPUAttentionKVDecodeBaseB1(b *testing.B) {
	benchAttentionKVHeads(b, 1, 1000, 8, 4, 32)
}
func BenchmarkCPUAttentionKVDecode110MB1(b *testing.B) {
	benchAttentionKVHeads(b, 1, 200, 12, 12, 64)
}

// The base model's heads for a full decoding batch of harness prompts:
// the shape that dominates sampling for the engine's rollouts.
func BenchmarkCPUAttentionKVDecodeBaseB64(b *testing.B) {
	benchAttentionKVHeads(b, 64, 500, 8, 4, 32)
}

// One decoding step of the base model's heads for 64 sequences that are
// 8 samples each of 8 prompts of 4 KVBlocks (the engine's k = 8
// evaluation), 40 positions past the prompt: "copies" gives every
// sequence its own cache, "shared" splits each cache after the prompt so
// that the 8 samples of a prompt read one prefix cache.
func BenchmarkCPUAttentionKVDecodeShared(b *testing.B) {
	const prompts, samples, H, KVH, hd = 8, 8, 8, 4, 32
	pn, extra := 4*KVBlock, 40
	n := pn + extra
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "copies", true: "shared"}[shared]
		b.Run(name, func(b *testing.B) {
			be := NewCPU()
			e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
			var spans []KVSpan
			for p := 0; p < prompts; p++ {
				pk, pv := filledCache(be, e, pn, KVH, hd)
				for s := 0; s < samples; s++ {
					row := len(spans)
					if shared {
						k, v := filledCache(be, e, extra, KVH, hd)
						spans = append(spans, KVSpan{K: k, V: v, Cap: extra, QRow: row, Rows: 1, Pos0: n - 1, PK: pk, PV: pv, PCap: pn, PN: pn})
						continue
					}
					k, v := be.Alloc(KVH*n*hd), be.Alloc(KVH*n*hd)
					be.CacheCopy(k, pk, Keys, 0, 0, pn, KVH, hd, n, pn)
					be.CacheCopy(v, pv, Values, 0, 0, pn, KVH, hd, n, pn)
					be.CacheWrite(k, e.in(extra*KVH*hd), Keys, pn, extra, KVH, hd, n)
					be.CacheWrite(v, e.in(extra*KVH*hd), Values, pn, extra, KVH, hd, n)
					spans = append(spans, KVSpan{K: k, V: v, Cap: n, QRow: row, Rows: 1, Pos0: n - 1})
				}
			}
			q, out := e.in(len(spans)*H*hd), be.Alloc(len(spans)*H*hd)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				be.AttentionKV(out, q, spans, H, KVH, hd)
			}
		})
	}
}

// BenchmarkCPUAttentionKVDecodeB64Layers is BenchmarkCPUAttentionKVDecodeB64
// as a decoding step meets it: the four layers' caches of bench-small at
// batch 64 (20 MB) in turn, and 3 MB of other reads (about one layer's
// float32 weights) before each, so that a layer's keys and values come
// from L3 or memory, not from the core's caches. "reads" times the other
// reads alone: the attention's share is the difference. "cache-reads"
// reads the layer's keys and values instead of attending over them (each
// cache tensor in one sequential pass, the tensors split over the threads):
// the time the same bytes take as streams, the bound of attention's memory
// share.
func BenchmarkCPUAttentionKVDecodeB64Layers(b *testing.B) {
	const rows, pos, H, KVH, hd, layers = 64, 150, 8, 2, 32, 4
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	cap := (pos + KVCapGranule) / KVCapGranule * KVCapGranule // as the sampler sizes them: a multiple of the granule past pos
	spans := make([][]KVSpan, layers)
	for l := range spans {
		for s := 0; s < rows; s++ {
			kc, vc := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
			be.CacheWrite(kc, e.in(cap*KVH*hd), Keys, 0, cap, KVH, hd, cap)
			be.CacheWrite(vc, e.in(cap*KVH*hd), Values, 0, cap, KVH, hd, cap)
			spans[l] = append(spans[l], KVSpan{K: kc, V: vc, Cap: cap, QRow: s, Rows: 1, Pos0: pos})
		}
	}
	other := e.in(3 << 18)
	q, out := e.in(rows*H*hd), be.Alloc(rows*H*hd)
	for _, attn := range []bool{true, false} {
		b.Run(map[bool]string{true: "attention", false: "reads"}[attn], func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				be.SumSq(other)
				if attn {
					be.AttentionKV(out, q, spans[i%layers], H, KVH, hd)
				}
			}
		})
	}
	b.Run("cache-reads", func(b *testing.B) {
		sums := make([]float32, 2*rows)
		for i := 0; b.Loop(); i++ {
			be.SumSq(other)
			sp := spans[i%layers]
			Parallel(2*len(sp), 1, func(lo, hi int) {
				var acc float32
				for j := lo; j < hi; j++ {
					t := sp[j/2].K
					if j%2 == 1 {
						t = sp[j/2].V
					}
					x := be.s(t)
					acc += be.dot(x, x)
				}
				sums[lo] += acc
			})
		}
	})
}

// BenchmarkReadBandwidth reads a buffer of 1, 12 (bench-small's float32
// weights) or 64 MiB in one sequential pass per thread (a dot product of
// each thread's half with itself) on one and on two threads: what a
// product that streams weights of that size from L2, L3 or memory can
// reach on this machine.
func BenchmarkReadBandwidth(b *testing.B) {
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	for _, mb := range []int{1, 12, 64} {
		x := be.s(e.in(mb << 18))
		for _, parts := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dMiB-%dthreads", mb, parts), func(b *testing.B) {
				var sums [2]float32
				b.SetBytes(int64(4 * len(x)))
				withThreads(parts, func() {
					for b.Loop() {
						per := len(x) / parts
						Parallel(parts, 1, func(lo, hi int) {
							for p := lo; p < hi; p++ {
								y := x[p*per : (p+1)*per]
								sums[p] += be.dot(y, y)
							}
						})
					}
				})
			})
		}
	}
}

// BenchmarkRoPE rotates one decoding row (bench-small's 8 query heads of
// 32) and a training batch's 1,024 such rows over 128 positions.
func BenchmarkRoPE(b *testing.B) {
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	for _, rows := range []int{1, 1024} {
		b.Run(map[int]string{1: "decode-row", 1024: "train-batch"}[rows], func(b *testing.B) {
			x, out := e.in(rows*8*32), be.Alloc(rows*8*32)
			pos := make([]int32, rows)
			for i := range pos {
				pos[i] = int32(150 + i%128)
			}
			for b.Loop() {
				be.RoPE(out, x, pos, rows, 8, 32, 1e6)
			}
		})
	}
}

// BenchmarkCPUAttentionKVPrompt times AttentionKV over one prompt of 500
// rows with the base model's heads (a searchqa prompt computed from
// scratch), its rows in tiles (promptRows, where the kernels run in assembly)
// and one at a time.
func BenchmarkCPUAttentionKVPrompt(b *testing.B) {
	const rows, H, KVH, hd = 500, 8, 4, 32
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	cap := (rows + KVCapGranule) / KVCapGranule * KVCapGranule
	kc, vc := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
	be.CacheWrite(kc, e.in(rows*KVH*hd), Keys, 0, rows, KVH, hd, cap)
	be.CacheWrite(vc, e.in(rows*KVH*hd), Values, 0, rows, KVH, hd, cap)
	spans := []KVSpan{{K: kc, V: vc, Cap: cap, Rows: rows}}
	q, out := e.in(rows*H*hd), be.Alloc(rows*H*hd)
	flops := float64(4 * H * hd * rows * (rows + 1) / 2) // scores and value sums over the causal positions
	for _, tiles := range []bool{true, false} {
		b.Run(fmt.Sprintf("tiles=%v", tiles), func(b *testing.B) {
			saved := attnTiles
			defer func() { attnTiles = saved }()
			attnTiles = saved && tiles
			for i := 0; i < b.N; i++ {
				be.AttentionKV(out, q, spans, H, KVH, hd)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkCPUAttentionKVDecodeGroups is one decoding step of the base
// model's heads for 8 prompts of 512 positions (a prefix of 512 shared)
// with 1 to 8 samples each, 40 positions past the prompt, with the
// prefix's rows computed together (sharedRows) and without: where the
// run's tiles start to pay for transposing the prefix's keys.
func BenchmarkCPUAttentionKVDecodeGroups(b *testing.B) {
	const prompts, H, KVH, hd, pn, extra = 8, 8, 4, 32, 512, 40
	for _, samples := range []int{1, 2, 3, 4, 6, 8} {
		for _, shared := range []bool{false, true} {
			b.Run(fmt.Sprintf("samples=%d/shared=%v", samples, shared), func(b *testing.B) {
				be := NewCPU()
				if !shared {
					be.shared = nil
				} else {
					defer withPrefixTiles()()
				}
				e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
				var spans []KVSpan
				for p := 0; p < prompts; p++ {
					pk, pv := filledCache(be, e, pn, KVH, hd)
					for s := 0; s < samples; s++ {
						k, v := filledCache(be, e, extra, KVH, hd)
						spans = append(spans, KVSpan{K: k, V: v, Cap: extra, QRow: len(spans), Rows: 1, Pos0: pn + extra - 1, PK: pk, PV: pv, PCap: pn, PN: pn})
					}
				}
				q, out := e.in(len(spans)*H*hd), be.Alloc(len(spans)*H*hd)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					be.AttentionKV(out, q, spans, H, KVH, hd)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(spans)), "ns/row")
			})
		}
	}
}

// filledCache returns a key and a value cache of capacity n, every
// position filled with random values.
func filledCache(be *CPU[float32], e *opEnv, n, KVH, hd int) (Tensor, Tensor) {
	k, v := be.Alloc(KVH*n*hd), be.Alloc(KVH*n*hd)
	be.CacheWrite(k, e.in(n*KVH*hd), Keys, 0, n, KVH, hd, n)
	be.CacheWrite(v, e.in(n*KVH*hd), Values, 0, n, KVH, hd, n)
	return k, v
}
