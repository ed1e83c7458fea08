package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionKVSplitPrefix checks spans whose first positions live in a
// prefix cache (a prompt shared by several sequences) against the same
// spans in one cache. The float32 kernels sum values as one chain over the
// positions in order whichever cache holds a position, so the results must
// be the same bits; the float64 reference sums the two caches apart and is held to
// 1e-12 relative. Every head grouping the fast kernels handle (1, 2, 4, 8
// query heads per KV head), splits at every multiple of the CPU's prefix
// granule (32), one and several blocks in each part, rows of
// a prefill chunk and of decoding; and float32 against float64 (1e-5
// relative: a few hundred roundings of terms of order 1).
func TestAttentionKVSplitPrefix(t *testing.T) {
	for _, sh := range [][3]int{{4, 4, 8}, {8, 4, 32}, {8, 2, 32}, {8, 1, 16}, {12, 12, 64}} {
		H, KVH, hd := sh[0], sh[1], sh[2]
		for _, n := range []int{cpuPrefixGranule + 5, KVBlock + 1, KVBlock + 9, 2*KVBlock + 1, 3*KVBlock + 40} {
			for pn := cpuPrefixGranule; pn < n; pn += cpuPrefixGranule {
				for _, rows := range []int{1, 3} {
					if n-rows < pn {
						continue
					}
					name := fmt.Sprintf("H%dKV%dhd%d/n%d/pn%d/rows%d", H, KVH, hd, n, pn, rows)
					var outs [2][2][]float64 // [float32, float64][whole, split]
					for bi, be := range []Backend{NewCPU(), NewCPU64()} {
						e := &opEnv{be: be, rng: rand.New(rand.NewPCG(uint64(n), uint64(pn)))}
						cap := n + 2
						k, v := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
						be.CacheWrite(k, e.in(n*KVH*hd), Keys, 0, n, KVH, hd, cap)
						be.CacheWrite(v, e.in(n*KVH*hd), Values, 0, n, KVH, hd, cap)
						whole := KVSpan{K: k, V: v, Cap: cap, Rows: rows, Pos0: n - rows}
						q := e.in(rows * H * hd)
						a, b := be.Alloc(rows*H*hd), be.Alloc(rows*H*hd)
						be.AttentionKV(a, q, []KVSpan{whole}, H, KVH, hd)
						be.AttentionKV(b, q, []KVSpan{splitSpan(be, whole, k, v, cap, pn, KVH, hd)}, H, KVH, hd)
						outs[bi] = [2][]float64{host64(be, a), host64(be, b)}
					}
					for i, x := range outs[0][0] {
						if math.Float64bits(x) != math.Float64bits(outs[0][1][i]) {
							t.Fatalf("%s: float32 split prefix differs from one cache at %d: %v vs %v", name, i, outs[0][1][i], x)
						}
					}
					if err := relErr(outs[1][1], outs[1][0]); !(err <= 1e-12) {
						t.Errorf("%s: float64 split vs one cache: relative error %.3g", name, err)
					}
					if err := relErr(outs[0][1], outs[1][0]); !(err <= 1e-5) {
						t.Errorf("%s: float32 split vs float64: relative error %.3g", name, err)
					}
				}
			}
		}
	}
}
