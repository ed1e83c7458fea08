package kernels

import (
	"math/rand/v2"
	"testing"
)

// benchAttentionKV times one decode step of attention for rows sequences
// at position pos with bench-small's heads (8 query, 2 KV, head dim 32).
func benchAttentionKV(b *testing.B, rows, pos int) {
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	H, KVH, hd, cap := 8, 2, 32, pos+1
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
