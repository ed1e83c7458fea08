package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSharedPrefixRowsMatchAlone: the rows of spans that share a prefix
// cache, computed together in AttentionKV (sharedRows, on an AVX-512
// machine), have the bits of each row computed alone (a span of its own,
// as the decode path computes it) and of the whole call with the tiles
// turned off. The call mixes two prompts' samples at different lengths
// (own positions from 1 to 61, own caches whose last block is narrower
// than 8), a sample of several rows, a prompt span of 30 rows that shares
// the prefix (two tiles, six rows in the run), a span without a prefix and
// a prompt with a single sample, the samples of a prompt not all side by
// side in the batch; prefixes of 128 and 256 positions; one,
// two and four query heads a KV head and hd 32, 64 and 96.
func TestSharedPrefixRowsMatchAlone(t *testing.T) {
	if !promptTiles(32) {
		t.Log("no assembly tiles here: AttentionKV computes every row alone, which this still compares")
	}
	defer withPrefixTiles()()
	type spec struct{ prompt, own, rows int } // prompt -1: no prefix
	specs := []spec{{0, 0, 1}, {0, 3, 1}, {0, 7, 1}, {0, 8, 1}, {0, 40, 3}, {0, 61, 1}, {0, 5, 30},
		{-1, 50, 1}, {1, 2, 1}, {0, 20, 1}, {1, 17, 1}, {2, 9, 1}, {0, 12, 1}}
	for _, sh := range [][3]int{{8, 4, 32}, {8, 2, 32}, {16, 4, 32}, {4, 4, 64}, {2, 2, 96}, {12, 12, 64}} {
		H, KVH, hd := sh[0], sh[1], sh[2]
		for _, pn := range []int{32, 96, 128, 256} {
			name := fmt.Sprintf("H%dKV%dhd%d/pn%d", H, KVH, hd, pn)
			be := NewCPU()
			e := &opEnv{be: be, rng: rand.New(rand.NewPCG(uint64(pn), uint64(hd)))}
			var pk, pv [3]Tensor
			for p := range pk {
				pk[p], pv[p] = be.Alloc(KVH*(pn+1)*hd), be.Alloc(KVH*(pn+1)*hd)
				be.CacheWrite(pk[p], e.in(pn*KVH*hd), Keys, 0, pn, KVH, hd, pn+1)
				be.CacheWrite(pv[p], e.in(pn*KVH*hd), Values, 0, pn, KVH, hd, pn+1)
			}
			var spans []KVSpan
			rows := 0
			for _, sp := range specs {
				own := sp.own + sp.rows // positions the own cache holds
				cap := own + 3
				k, v := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
				be.CacheWrite(k, e.in(own*KVH*hd), Keys, 0, own, KVH, hd, cap)
				be.CacheWrite(v, e.in(own*KVH*hd), Values, 0, own, KVH, hd, cap)
				s := KVSpan{K: k, V: v, Cap: cap, QRow: rows, Rows: sp.rows, Pos0: sp.own}
				if sp.prompt >= 0 {
					s.PK, s.PV, s.PCap, s.PN, s.Pos0 = pk[sp.prompt], pv[sp.prompt], pn+1, pn, pn+sp.own
				}
				spans = append(spans, s)
				rows += sp.rows
			}
			checkRowsAlone(t, name, be, e.in(rows*H*hd), spans, rows, H, KVH, hd, nil)
		}
	}
}

// checkRowsAlone runs AttentionKV over spans (rows query rows of q) and
// fails unless every output has the bits of its row computed alone (a
// span of one row), of the call with the tiles turned off, and of the
// call over each list of spans in also.
func checkRowsAlone(t *testing.T, name string, be *CPU[float32], q Tensor, spans []KVSpan, rows, H, KVH, hd int, also map[string][]KVSpan) {
	t.Helper()
	call := func(spans []KVSpan) []float64 {
		out := be.Alloc(rows * H * hd)
		be.AttentionKV(out, q, spans, H, KVH, hd)
		return host64(be, out)
	}
	want := map[string][]float64{}
	alone := be.Alloc(rows * H * hd)
	for _, sp := range spans {
		for r := 0; r < sp.Rows; r++ {
			row := sp
			row.Rows, row.Pos0, row.QRow = 1, sp.Pos0+r, sp.QRow+r
			be.AttentionKV(alone, q, []KVSpan{row}, H, KVH, hd)
		}
	}
	want["alone"] = host64(be, alone)
	saved := attnTiles
	attnTiles = false
	want["without tiles"] = call(spans)
	attnTiles = saved
	for what, sp := range also {
		want[what] = call(sp)
	}
	whole := call(spans)
	for what, w := range want {
		for i := range whole {
			if math.Float64bits(whole[i]) != math.Float64bits(w[i]) {
				t.Fatalf("%s: row %d, element %d: %v in the whole call, %v %s", name, i/(H*hd), i%(H*hd), whole[i], w[i], what)
			}
		}
	}
}

// withPrefixTiles turns the prefix and root tiles on wherever the prompt
// tiles are (on an AVX2 machine too, where AttentionKV leaves them off for
// speed), so that their kernels are checked there, and returns what
// restores the setting.
func withPrefixTiles() (restore func()) {
	saved := prefixTiles
	prefixTiles = attnTiles
	return func() { prefixTiles = saved }
}

// TestKVTransposeBlocks: dimension d of position p lands at d·ld+p, for
// every whole block, as kvAt reads it.
func TestKVTransposeBlocks(t *testing.T) {
	const hd, blocks, cap, ld = 32, 5, 43, 48
	src := make([]float32, cap*hd)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, hd*ld)
	kvTransposeBlocks(dst, ld, src, hd, blocks)
	for d := 0; d < hd; d++ {
		for p := 0; p < ld; p++ {
			want := float32(0)
			if p < blocks*kvBlock {
				want = src[kvAt(cap, hd, d, p)]
			}
			if dst[d*ld+p] != want {
				t.Fatalf("d %d p %d: %v, want %v", d, p, dst[d*ld+p], want)
			}
		}
	}
}
