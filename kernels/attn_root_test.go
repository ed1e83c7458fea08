package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestRootRowsMatchAlone: the rows of spans whose prompt caches begin with
// a root's positions, computed together in AttentionKV (rootRows, on an
// AVX-512 machine), have the bits of the same call without the roots, of
// each row alone, and of the call with the tiles turned off. Four prompts
// copy the first positions of root A, two of them 64 and two 96 (the
// gathering takes the shorter), a fifth copies root B's alone (a gathering
// too small for tiles), and one prompt has no root; the samples of a
// prompt sit apart in the batch, at own lengths from 1 to 61, with a
// prompt span of 30 rows among them; prefixes of 128 and 160 positions
// past roots of up to 96; one to six query heads a KV head and hd 32, 64
// and 96. With 90 samples of one root the gathering splits into chunks,
// and runs of a prompt's samples side by side score that prompt in tiles.
func TestRootRowsMatchAlone(t *testing.T) {
	if !promptTiles(32) {
		t.Log("no assembly tiles here: AttentionKV computes every row alone, which this still compares")
	}
	defer withPrefixTiles()()
	type spec struct{ prompt, own, rows int } // prompt: index into the prompts below
	base := []spec{{0, 0, 1}, {1, 3, 1}, {2, 7, 1}, {3, 8, 1}, {0, 40, 3}, {1, 61, 1}, {2, 5, 30},
		{4, 50, 1}, {5, 2, 1}, {0, 20, 1}, {1, 17, 1}, {3, 9, 1}, {2, 12, 1}, {5, 33, 1}}
	many := append([]spec(nil), base...)
	for i := range 90 {
		many = append(many, spec{i % 4, 1 + i%13, 1})
	}
	// Samples of one prompt side by side: runs whose prompt after the
	// root goes in tiles (14 rows, and 7 at two query heads a KV head).
	for i := range 14 {
		many = append(many, spec{3, 2 + 3*i, 1})
	}
	for i := range 7 {
		many = append(many, spec{0, 40 - i, 1})
	}
	for _, sh := range [][3]int{{8, 4, 32}, {8, 2, 32}, {4, 4, 32}, {12, 2, 64}, {2, 2, 96}} {
		H, KVH, hd := sh[0], sh[1], sh[2]
		for _, pn := range []int{128, 160} {
			for si, specs := range [][]spec{base, many} {
				name := fmt.Sprintf("H%dKV%dhd%d/pn%d/specs%d", H, KVH, hd, pn, si)
				be := NewCPU()
				e := &opEnv{be: be, rng: rand.New(rand.NewPCG(uint64(pn), uint64(hd)))}
				// Roots A and B, of capacity 100 (not a multiple of 8).
				const rcap = 100
				var rk, rv [2]Tensor
				for r := range rk {
					rk[r], rv[r] = be.Alloc(KVH*rcap*hd), be.Alloc(KVH*rcap*hd)
					be.CacheWrite(rk[r], e.in(rcap*KVH*hd), Keys, 0, rcap, KVH, hd, rcap)
					be.CacheWrite(rv[r], e.in(rcap*KVH*hd), Values, 0, rcap, KVH, hd, rcap)
				}
				// Prompts 0..3 on root A (64, 96, 64, 96 positions), 4 on B
				// (32), 5 without a root.
				roots := []struct{ root, rn int }{{0, 64}, {0, 96}, {0, 64}, {0, 96}, {1, 32}, {-1, 0}}
				pk, pv := make([]Tensor, len(roots)), make([]Tensor, len(roots))
				for p, ro := range roots {
					pk[p], pv[p] = be.Alloc(KVH*(pn+1)*hd), be.Alloc(KVH*(pn+1)*hd)
					be.CacheWrite(pk[p], e.in(pn*KVH*hd), Keys, 0, pn, KVH, hd, pn+1)
					be.CacheWrite(pv[p], e.in(pn*KVH*hd), Values, 0, pn, KVH, hd, pn+1)
					if ro.root >= 0 {
						be.CacheCopy(pk[p], rk[ro.root], Keys, 0, 0, ro.rn, KVH, hd, pn+1, rcap)
						be.CacheCopy(pv[p], rv[ro.root], Values, 0, 0, ro.rn, KVH, hd, pn+1, rcap)
					}
				}
				var spans []KVSpan
				rows := 0
				for _, sp := range specs {
					own := sp.own + sp.rows
					cap := own + 3
					k, v := be.Alloc(KVH*cap*hd), be.Alloc(KVH*cap*hd)
					be.CacheWrite(k, e.in(own*KVH*hd), Keys, 0, own, KVH, hd, cap)
					be.CacheWrite(v, e.in(own*KVH*hd), Values, 0, own, KVH, hd, cap)
					s := KVSpan{K: k, V: v, Cap: cap, QRow: rows, Rows: sp.rows, Pos0: pn + sp.own,
						PK: pk[sp.prompt], PV: pv[sp.prompt], PCap: pn + 1, PN: pn}
					if ro := roots[sp.prompt]; ro.root >= 0 {
						s.RK, s.RV, s.RCap, s.RN = rk[ro.root], rv[ro.root], rcap, ro.rn
					}
					spans = append(spans, s)
					rows += sp.rows
				}
				bare := make([]KVSpan, len(spans))
				for i, sp := range spans {
					sp.RK, sp.RV, sp.RCap, sp.RN = Tensor{}, Tensor{}, 0, 0
					bare[i] = sp
				}
				checkRowsAlone(t, name, be, e.in(rows*H*hd), spans, rows, H, KVH, hd, map[string][]KVSpan{"without roots": bare})
			}
		}
	}
}

// TestPlanRootsGathersByRoot: every untiled row of a span with a root is
// in exactly one root unit a KV head when its root's rows make a tile,
// and in none otherwise; a root unit's spans share the root; a large
// gathering splits into chunks, but not between the samples of one
// prompt, which sit side by side however the batch interleaves them.
func TestPlanRootsGathersByRoot(t *testing.T) {
	const KVH, grp = 2, 2
	be := NewCPU()
	ra, rb := be.Alloc(64), be.Alloc(64)
	var spans []KVSpan
	pkts := make([]Tensor, 40)
	for i := range pkts {
		pkts[i] = be.Alloc(64)
	}
	for i := range 200 {
		// Five samples a prompt, interleaved in the batch.
		sp := KVSpan{Rows: 1 + 13*(i%7/6), PK: pkts[i%40], PN: 32}
		switch {
		case i%5 == 4:
			sp.RK, sp.RN = rb, 32 // a gathering of its own
		case i == 3:
			sp.RN = 0 // no root
		default:
			sp.RK, sp.RN = ra, 32
		}
		if i == 199 {
			sp.RK = be.Alloc(64) // a root of one span: too few rows
		}
		spans = append(spans, sp)
	}
	rks, pks := make([][]float32, len(spans)), make([][]float32, len(spans))
	n := 0
	for i, sp := range spans {
		pks[i] = be.s(sp.PK)
		if sp.RN > 0 {
			rks[i] = be.s(sp.RK)
		}
		n += sp.Rows * KVH
	}
	var p unitPlan
	planUnits(&p, spans, pks, rks, n, KVH, grp, promptTile, true)
	// A root's spans of one prompt sit side by side in rorder.
	for i := 1; i < len(p.rorder); i++ {
		a, b := p.rorder[i-1], p.rorder[i]
		if &pks[a][0] == &pks[b][0] {
			continue
		}
		for _, c := range p.rorder[i+1:] {
			if &pks[c][0] == &pks[a][0] && &rks[c][0] == &rks[a][0] {
				t.Fatalf("span %d is apart from span %d of its prompt", c, a)
			}
		}
	}
	seen := map[[2]int]int{}
	chunks := 0
	for _, u := range p.units {
		if !u.root {
			if u.group == 0 && u.tile == 0 && p.rooted[u.span] {
				t.Fatalf("span %d is rooted but has a row unit", u.span)
			}
			continue
		}
		chunks++
		members := p.rorder[u.span : u.span+u.group]
		if next := int(u.span + u.group); next < len(p.rorder) && &pks[p.rorder[next]][0] == &pks[members[len(members)-1]][0] &&
			&rks[p.rorder[next]][0] == &rks[members[0]][0] && u.head == 0 {
			t.Fatalf("a chunk ends inside the samples of one prompt (span %d)", members[len(members)-1])
		}
		for _, m := range members {
			if &rks[m][0] != &rks[members[0]][0] {
				t.Fatalf("a root unit mixes roots: spans %d and %d", members[0], m)
			}
			seen[[2]int{int(m), int(u.head)}]++
		}
	}
	for i, sp := range spans {
		want := 0
		if sp.RN > 0 && i != 199 && untiledRows(sp.Rows, promptTile) > 0 {
			want = 1
		}
		for kh := range KVH {
			if got := seen[[2]int{i, kh}]; got != want {
				t.Fatalf("span %d head %d: in %d root units, want %d", i, kh, got, want)
			}
		}
	}
	if chunks <= 2*KVH {
		t.Fatalf("%d root units for %d heads: the large gathering was not split", chunks, KVH)
	}
}

// BenchmarkCPUAttentionKVDecodeRoots is one layer of a decoding step of
// the base model's heads as a harness meets it: 64 sequences, 2 samples
// each of 32 tasks whose prompts (512 positions) begin with one system
// prompt of 352 (the math h0's is 357 bytes), 40 positions past the
// prompt. "copies" reads each task's copy of the system prompt (no
// root), "root" names the root each prompt copied it from. Each layer of
// four has its caches, read in turn, so that they come from L3 or
// memory as in a step.
func BenchmarkCPUAttentionKVDecodeRoots(b *testing.B) {
	const tasks, samples, H, KVH, hd, pn, rn, extra, layers = 32, 2, 8, 4, 32, 512, 352, 40, 4
	be := NewCPU()
	e := &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 1))}
	spans := make([][]KVSpan, layers)
	for l := range spans {
		rk, rv := filledCache(be, e, rn, KVH, hd)
		for t := 0; t < tasks; t++ {
			pk, pv := filledCache(be, e, pn, KVH, hd)
			be.CacheCopy(pk, rk, Keys, 0, 0, rn, KVH, hd, pn, rn)
			be.CacheCopy(pv, rv, Values, 0, 0, rn, KVH, hd, pn, rn)
			for s := 0; s < samples; s++ {
				k, v := filledCache(be, e, extra, KVH, hd)
				spans[l] = append(spans[l], KVSpan{K: k, V: v, Cap: extra, QRow: len(spans[l]), Rows: 1, Pos0: pn + extra - 1,
					PK: pk, PV: pv, PCap: pn, PN: pn, RK: rk, RV: rv, RCap: rn, RN: rn})
			}
		}
	}
	q, out := e.in(tasks*samples*H*hd), be.Alloc(tasks*samples*H*hd)
	for _, root := range []bool{false, true} {
		b.Run(map[bool]string{false: "copies", true: "root"}[root], func(b *testing.B) {
			layer := make([][]KVSpan, layers)
			for l := range layer {
				layer[l] = append([]KVSpan(nil), spans[l]...)
				for i := range layer[l] {
					if !root {
						layer[l][i].RN = 0
					}
				}
			}
			for i := 0; b.Loop(); i++ {
				be.AttentionKV(out, q, layer[i%layers], H, KVH, hd)
			}
		})
	}
}
