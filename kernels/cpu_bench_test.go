package kernels

import (
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
	cap := pos + 1
	var spans []KVSpan
	for s := 0; s < rows; s++ {
		kc, vc := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
		be.CacheWrite(kc, e.in(cap*KVH*hd), 0, cap, KVH, hd, cap)
		be.CacheWrite(vc, e.in(cap*KVH*hd), 0, cap, KVH, hd, cap)
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
