package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPromptTilesMatchRowByRow: a prompt's rows computed in AttentionKV's
// tiles (promptRows, on an AVX-512 machine) have the bits of the same rows
// computed one at a time, each as its own span (a decoding step, or a
// later turn that reuses the prompt's cache), and of the whole span with
// the tiles turned off; with and without a prefix cache, tiles starting
// at any position, a cache whose last block is narrower than 8, and one,
// two and four query heads to a KV head.
func TestPromptTilesMatchRowByRow(t *testing.T) {
	if !promptTiles(32) {
		t.Log("no AVX-512 here: AttentionKV computes every row alone, which this still compares")
	}
	for _, sh := range [][3]int{{8, 4, 32}, {8, 2, 32}, {16, 4, 32}, {4, 4, 64}, {2, 2, 96}} {
		H, KVH, hd := sh[0], sh[1], sh[2]
		for _, c := range []struct{ pos0, rows, pn int }{
			{0, 12, 0}, {0, 40, 0}, {5, 29, 0}, {3, 13, 0}, {128, 37, 128}, {128, 12, 128}, {133, 50, 128}, {256, 30, 128},
		} {
			name := fmt.Sprintf("H%dKV%dhd%d/pos%d/rows%d/pn%d", H, KVH, hd, c.pos0, c.rows, c.pn)
			be := NewCPU()
			e := &opEnv{be: be, rng: rand.New(rand.NewPCG(uint64(c.rows), uint64(hd)))}
			n, cap := c.pos0+c.rows, c.pos0+c.rows+3
			k, v := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
			be.CacheWrite(k, e.in(n*KVH*hd), Keys, 0, n, KVH, hd, cap)
			be.CacheWrite(v, e.in(n*KVH*hd), Values, 0, n, KVH, hd, cap)
			span := KVSpan{K: k, V: v, Cap: cap, Rows: c.rows, Pos0: c.pos0}
			if c.pn > 0 {
				span = splitSpan(be, span, k, v, cap, c.pn, KVH, hd)
			}
			q := e.in(c.rows * H * hd)
			whole := be.Alloc(c.rows * H * hd)
			be.AttentionKV(whole, q, []KVSpan{span}, H, KVH, hd)
			alone := be.Alloc(c.rows * H * hd)
			for r := 0; r < c.rows; r++ {
				row := span
				row.Rows, row.Pos0, row.QRow = 1, c.pos0+r, r
				be.AttentionKV(alone, q, []KVSpan{row}, H, KVH, hd)
			}
			saved := attnTiles
			attnTiles = false
			untiled := be.Alloc(c.rows * H * hd)
			be.AttentionKV(untiled, q, []KVSpan{span}, H, KVH, hd)
			attnTiles = saved
			w, a, u := host64(be, whole), host64(be, alone), host64(be, untiled)
			for i := range w {
				if math.Float64bits(w[i]) != math.Float64bits(a[i]) || math.Float64bits(w[i]) != math.Float64bits(u[i]) {
					t.Fatalf("%s: row %d, element %d: %v in the whole span, %v alone, %v without tiles", name, i/(H*hd), i%(H*hd), w[i], a[i], u[i])
				}
			}
		}
	}
}

// TestAttnUnitsTilePrompts: with tiles, every (span, row, KV head) is in
// exactly one unit; a span of at least a tile's rows goes in whole tiles
// after its first Rows%tile rows, a shorter one row by row, and a run of
// spans sharing a prefix as one unit a head for their untiled rows when
// they and the query heads a KV head make a twelve-row tile; without tiles
// no unit is a tile or a run.
func TestAttnUnitsTilePrompts(t *testing.T) {
	const KVH = 3
	shared, other, third := make([]float32, 8), make([]float32, 8), make([]float32, 8)
	// Spans 4 to 9 share a prefix, 10 and 11 another, 12 a third; the
	// batch holds them interleaved, as slots refilled in turn leave them.
	spans := []KVSpan{{Rows: 1}, {Rows: 30}, {Rows: 11}, {Rows: 12}}
	pks := [][]float32{nil, nil, nil, nil}
	for range 6 {
		spans, pks = append(spans, KVSpan{Rows: 1, PN: 8}), append(pks, shared)
	}
	spans = append(spans, KVSpan{Rows: 1, PN: 8}, KVSpan{Rows: 23, PN: 8}, KVSpan{Rows: 1, PN: 8})
	pks = append(pks, other, other, third)
	perm := []int{4, 10, 0, 5, 6, 12, 1, 7, 11, 2, 8, 3, 9}
	spans, pks = permute(spans, perm), permute(pks, perm)
	at := make([]int, len(perm)) // where span i of the list above now sits
	for i, p := range perm {
		at[p] = i
	}
	n := 0
	for _, sp := range spans {
		n += sp.Rows * KVH
	}
	for _, c := range []struct{ tile, grp int }{{0, 2}, {promptTile, 1}, {promptTile, 2}} {
		seen := map[[3]int]int{}
		tiles, groups := map[int]int{}, map[int]int{}
		var p unitPlan
		planUnits(&p, spans, pks, nil, n, KVH, c.grp, c.tile, true)
		units, order := p.units, p.order
		for _, u := range units {
			if u.group > 0 {
				members := order[u.span : u.span+u.group]
				groups[int(members[0])] += len(members)
				for _, s := range members {
					if &pks[s][0] != &pks[members[0]][0] {
						t.Fatalf("tile %d grp %d: a run holds spans %d and %d of different prefixes", c.tile, c.grp, members[0], s)
					}
					for r := range untiledRows(spans[s].Rows, c.tile) {
						seen[[3]int{int(s), r, int(u.head)}]++
					}
				}
				continue
			}
			rows := 1
			if u.tile > 0 {
				rows = int(u.tile)
				tiles[int(u.span)]++
			}
			for r := int(u.row); r < int(u.row)+rows; r++ {
				seen[[3]int{int(u.span), r, int(u.head)}]++
			}
		}
		for s, sp := range spans {
			for r := 0; r < sp.Rows; r++ {
				for kh := 0; kh < KVH; kh++ {
					if k := seen[[3]int{s, r, kh}]; k != 1 {
						t.Fatalf("tile %d grp %d: span %d row %d head %d in %d units", c.tile, c.grp, s, r, kh, k)
					}
				}
			}
		}
		if len(seen) != n {
			t.Fatalf("tile %d grp %d: units cover %d (span, row, head), want %d", c.tile, c.grp, len(seen), n)
		}
		wantTiles, wantGroups := map[int]int{}, map[int]int{}
		if c.tile > 0 {
			// 30 rows: 6 alone, then 2 tiles; 12 and 23 rows: 1 tile.
			wantTiles = map[int]int{at[1]: 2 * KVH, at[3]: KVH, at[11]: KVH}
			// Spans 10 and 11 share a prefix: 1 + 11 untiled rows, a run
			// at either grp; spans 4 to 9 (6 rows) only with 2 heads a KV
			// head; span 12 is alone.
			wantGroups = map[int]int{at[10]: 2 * KVH}
			if c.grp == 2 {
				wantGroups[at[4]] = 6 * KVH
			}
		}
		if fmt.Sprint(tiles) != fmt.Sprint(wantTiles) || fmt.Sprint(groups) != fmt.Sprint(wantGroups) {
			t.Errorf("tile %d grp %d: tiles per span %v, runs %v; want %v, %v", c.tile, c.grp, tiles, groups, wantTiles, wantGroups)
		}
	}
}

// permute returns the elements of x in the order perm gives.
func permute[E any](x []E, perm []int) []E {
	out := make([]E, len(perm))
	for i, p := range perm {
		out[i] = x[p]
	}
	return out
}
