package kernels

import "math"

// A harness's prompts begin with one system prompt whatever the task, and
// a decoding batch holds the samples of many tasks. The sampler copies
// those first positions from one cache into each task's prompt cache and
// says so (KVSpan.RK, RN); here the untiled rows of every span of one root
// score the root's positions as tiles over all of them, where the decode
// path (and sharedRows, whose prefix is one task's prompt) would read each
// task's copy row by row from memory. The rest of a row's positions, its
// prompt's after the root and its own, go through the decode kernels.
//
// The bits are the decode path's, as in sharedRows: a root score is one
// FMA chain over the head's dimensions from zero (kern12x32 over k = hd),
// the softmax the decode path's over the same whole vector of positions,
// and the value sums one FMA chain over positions from zero (kern12x32
// over k = RN) that the decode kernel continues over the prompt's
// remaining positions and then the row's own
// (TestRootRowsMatchAlone).

// rootChunkRows is about how many query rows (rows × query heads of a KV
// head) one unit of a root takes: enough that the tiles amortise
// transposing the root's keys, few enough that the unit's scores stay in
// L2 and that a large batch splits between threads. A choice by that
// reasoning, not a tuned figure.
const rootChunkRows = 64

// planRoots gathers into p.rorder the spans that have a root and rows
// AttentionKV computes one at a time (untiledRows), by root cache, and
// for each gathering whose rows times grp make at least sharedMinRows
// appends its units, head by head, in chunks of about rootChunkRows that
// keep the spans of one prefix cache next to each other together, and
// marks its spans in p.rooted. The spans of a smaller gathering go as
// without a root.
func planRoots[E any](p *unitPlan, spans []KVSpan, pks, rks [][]E, KVH, grp, tile int) {
	sameRoot := func(i, j int) bool {
		return len(rks[i]) == len(rks[j]) && &rks[i][0] == &rks[j][0]
	}
	p.rorder = p.rorder[:0]
	p.reps = p.reps[:0]
	for i, sp := range spans {
		if sp.RN == 0 || untiledRows(sp.Rows, tile) == 0 {
			continue
		}
		known := false
		for _, r := range p.reps {
			if sameRoot(int(r), i) {
				known = true
				break
			}
		}
		if known {
			continue
		}
		p.reps = append(p.reps, int32(i))
		from, rows := len(p.rorder), 0
		for j := i; j < len(spans); j++ {
			if sp := spans[j]; sp.RN > 0 && untiledRows(sp.Rows, tile) > 0 && sameRoot(i, j) {
				p.rorder = append(p.rorder, int32(j))
				rows += untiledRows(sp.Rows, tile) * grp
			}
		}
		if rows < sharedMinRows {
			p.rorder = p.rorder[:from]
			continue
		}
		members := p.rorder[from:]
		// The samples of one prompt next to each other (a batch may
		// interleave them: the k-th samples of many tasks), so that they
		// make one run (rootRows) and one chunk. A batch holds at most a
		// few dozen spans: the quadratic scan is short.
		for i := 0; i < len(members); {
			j := i + 1
			for k := i + 1; k < len(members); k++ {
				if samePrefixCache(spans, pks, members[i], members[k]) {
					m := members[k]
					copy(members[j+1:k+1], members[j:k])
					members[j] = m
					j++
				}
			}
			i = j
		}
		for _, m := range members {
			p.rooted[m] = true
		}
		// Chunks of about rootChunkRows rows each.
		chunks := max(1, rows/rootChunkRows)
		for kh := 0; kh < KVH; kh++ {
			at, done, c := 0, 0, 1
			for k := range members {
				done += untiledRows(spans[members[k]].Rows, tile) * grp
				last := k == len(members)-1
				if last || (done >= c*rows/chunks && c < chunks && !samePrefixCache(spans, pks, members[k], members[k+1])) {
					p.units = append(p.units, attnUnit{span: int32(from + at), head: int32(kh), group: int32(k + 1 - at), root: true})
					at = k + 1
					c++
				}
			}
		}
	}
	p.reps = p.reps[:0]
}

// rootRun is a run of a root unit's members that share a prefix cache
// (the samples of one task side by side in the batch): members
// [from, to), whose rows sit from row x of the unit's scratch (a multiple
// of four, so that the run's rows are whole tiles of their own).
type rootRun struct{ from, to, x, rows int }

// rootSpanRows is rootRows for a root unit: the root the spans members
// name (KVSpan.RK), over the fewest positions any of them names.
func rootSpanRows(st *sharedState, o, qs []float32, spans []KVSpan, members []int32, tile int, ks, vs, pks, pvs [][]float32, rk, rv []float32, kh, grp, hd, qw int, scale float32) {
	rn := spans[members[0]].RN
	for _, m := range members {
		rn = min(rn, spans[m].RN)
	}
	rootRows(st, o, qs, spans, members, tile, ks, vs, pks, pvs, rk, rv, spans[members[0]].RCap, rn, kh, grp, hd, qw, scale)
}

// rootRows computes AttentionKV's outputs for KV head kh and its grp query
// heads of the untiled rows of the spans members, whose first rn
// positions (a multiple of 32) are those of the root cache rk, rv (all
// heads, capacity rcp): the root's scores and value sums as tiles over
// all the rows; a run of at least sharedMinRows rows that share a prompt
// cache its prompt's positions after the root as tiles too (and the
// value sums of the whole prompt from its cache, whose first positions
// are the root's bits); the rest with the decode kernels. ks, vs, pks and
// pvs are the call's spans' caches, o and qs its outputs and queries (qw
// elements a row).
func rootRows(st *sharedState, o, qs []float32, spans []KVSpan, members []int32, tile int, ks, vs, pks, pvs [][]float32, rk, rv []float32, rcp, rn, kh, grp, hd, qw int, scale float32) {
	st.runs = st.runs[:0]
	x, ld, seg := 0, 0, 0
	for i, m := range members {
		sp := spans[m]
		u := untiledRows(sp.Rows, tile)
		ld = max(ld, sp.Pos0+u)
		if i == 0 || !samePrefixCache(spans, pks, members[i-1], m) {
			x = roundUp(x, 4)
			st.runs = append(st.runs, rootRun{from: i, x: x})
		}
		r := &st.runs[len(st.runs)-1]
		r.to, r.rows = i+1, r.rows+u*grp
		x += u * grp
	}
	// tiled says run r's prompt after the root goes in tiles.
	tiled := func(r rootRun) bool {
		return r.rows >= sharedMinRows && spans[members[r.from]].PN > rn
	}
	for _, r := range st.runs {
		if tiled(r) {
			seg = max(seg, spans[members[r.from]].PN-rn)
		}
	}
	rows4 := roundUp(x, 4)
	ld = roundUp(ld, 32)     // whole vectors of any row's positions, and whole 32-column tiles
	ldk := max(rn, seg) + 16 // a cache line past the keys: see sharedRows
	st.kt = grow(st.kt, hd*ldk)
	st.q = grow(st.q, rows4*hd)
	st.s = grow(st.s, rows4*ld)
	st.ob = grow(st.ob, rows4*hd)
	st.sums = grow(st.sums, rows4)
	clear(st.q[:rows4*hd]) // padding rows: finite scores, outputs dropped
	for _, r := range st.runs {
		x := r.x
		for _, m := range members[r.from:r.to] {
			sp := spans[m]
			for r := range untiledRows(sp.Rows, tile) {
				copy(st.q[x*hd:(x+grp)*hd], qs[(sp.QRow+r)*qw+kh*grp*hd:])
				x += grp
			}
		}
	}
	// ahead asks the caches for what member i's rows read from c (ks or
	// vs) and, when it is the first of its prompt's run, from its prompt
	// after the root (pc: pks or pvs), while the member before it
	// computes: its own cache comes from L3 or memory.
	ahead := func(i int, c, pc [][]float32) {
		if i >= len(members) || !useAsm {
			return
		}
		m := members[i]
		sp := spans[m]
		own := min(sp.Cap, roundUp(sp.Pos0+untiledRows(sp.Rows, tile)-sp.PN, kvBlock)) * hd
		prefetchRows(c[m][kh*hd*sp.Cap:], own, 1, own)
		if sp.PN > rn && (i == 0 || !samePrefixCache(spans, pks, members[i-1], m)) {
			seg := (sp.PN - rn) * hd
			prefetchRows(pc[m][kh*hd*sp.PCap+rn*hd:], seg, 1, seg)
		}
	}
	// The root's scores, twelve rows a tile, then four, while the first
	// member's keys come.
	ahead(0, ks, pks)
	kvTransposeBlocks(st.kt, ldk, rk[kh*hd*rcp:(kh+1)*hd*rcp], hd, rn/kvBlock)
	scoreTiles(st, 0, rows4, rn, ldk, hd, ld, 0)
	// A tiled run's prompt after the root.
	for _, r := range st.runs {
		if !tiled(r) {
			continue
		}
		sp := spans[members[r.from]]
		pkt := pks[members[r.from]][kh*hd*sp.PCap : (kh+1)*hd*sp.PCap]
		kvTransposeBlocks(st.kt, ldk, pkt[rn*hd:], hd, (sp.PN-rn)/kvBlock)
		scoreTiles(st, r.x, r.x+roundUp(r.rows, 4), sp.PN-rn, ldk, hd, ld, rn)
	}
	// eachRow calls f for each untiled row r of each member in turn, with
	// the head's own cache of keys or values (from c: ks or vs), its
	// prompt's cache from the root's end (from pc: pks or pvs; nil when
	// the run tiles it or the root is the whole prompt) and the row's
	// first scratch row x. It prefetches the next member's caches first.
	eachRow := func(c, pc [][]float32, f func(sp KVSpan, own, prompt []float32, r, x int)) {
		for _, run := range st.runs {
			x, pre := run.x, !tiled(run)
			for i := run.from; i < run.to; i++ {
				ahead(i+1, c, pc)
				m := members[i]
				sp := spans[m]
				own := c[m][kh*hd*sp.Cap : (kh+1)*hd*sp.Cap]
				var prompt []float32
				if pre && sp.PN > rn {
					prompt = pc[m][kh*hd*sp.PCap+rn*hd : (kh+1)*hd*sp.PCap]
				}
				for r := range untiledRows(sp.Rows, tile) {
					f(sp, own, prompt, r, x)
					x += grp
				}
			}
		}
	}
	// The rest of each row's scores, its prompt's (untiled runs) then its
	// own, and the softmax, as the decode path does them.
	negInf := float32(math.Inf(-1))
	eachRow(ks, pks, func(sp KVSpan, kt, pkt []float32, r, x int) {
		n, pn := sp.Pos0+r+1, sp.PN
		ldn := (n + kvBlock - 1) &^ (kvBlock - 1)
		for g := 0; g < grp; {
			c := decodeChunk(grp - g)
			if pkt != nil {
				attnScores(c, st.s[(x+g)*ld+rn:], ld, st.q[(x+g)*hd:], hd, pkt, sp.PCap-rn, pn-rn)
			}
			attnScores(c, st.s[(x+g)*ld+pn:], ld, st.q[(x+g)*hd:], hd, kt, sp.Cap, n-pn)
			g += c
		}
		for g := 0; g < grp; g++ {
			row := st.s[(x+g)*ld : (x+g)*ld+ldn]
			for p := n; p < ldn; p++ {
				row[p] = negInf
			}
			st.sums[x+g] = softExp(row, scale)
		}
	})
	// The value sums over the root, tiles as the scores (while the first
	// member's values come); a tiled run's over its whole prompt instead,
	// from the prompt's cache, in place of its root sums (the root's tiles
	// run over all the rows at once, not run by run).
	ahead(0, vs, pvs)
	valueTiles(st, 0, rows4, rn, rv[kh*hd*rcp:(kh+1)*hd*rcp], hd, ld)
	for _, r := range st.runs {
		if tiled(r) {
			sp := spans[members[r.from]]
			pvt := pvs[members[r.from]][kh*hd*sp.PCap : (kh+1)*hd*sp.PCap]
			valueTiles(st, r.x, r.x+roundUp(r.rows, 4), sp.PN, pvt, hd, ld)
		}
	}
	// Each row continues its chain over its prompt's positions past the
	// root (untiled runs) and then its own; then the division by the
	// softmax's sum.
	eachRow(vs, pvs, func(sp KVSpan, vt, pvt []float32, r, x int) {
		n, pn := sp.Pos0+r+1, sp.PN
		og := o[(sp.QRow+r)*qw+kh*grp*hd:][:grp*hd]
		copy(og, st.ob[x*hd:(x+grp)*hd])
		for g := 0; g < grp; {
			c := decodeChunk(grp - g)
			if pvt != nil {
				attnMix(c, og[g*hd:], st.s[(x+g)*ld+rn:], ld, pvt, hd, pn-rn)
			}
			attnMix(c, og[g*hd:], st.s[(x+g)*ld+pn:], ld, vt, hd, n-pn)
			g += c
		}
		for g := 0; g < grp; g++ {
			inv := 1 / st.sums[x+g]
			out := og[g*hd : g*hd+hd]
			for j := range out {
				out[j] *= inv
			}
		}
	})
}

// scoreTiles sets the scores of rows [from, to) of st (a multiple of four
// apart) for n positions (a multiple of 32) from column at: the queries
// st.q against the keys transposed into st.kt (rows ldk apart).
func scoreTiles(st *sharedState, from, to, n, ldk, hd, ld, at int) {
	for t := from; t < to; {
		kern, tr := tileKern(to - t)
		for j := 0; j < n; j += 32 {
			kern(hd, st.q[t*hd:], hd, 1, st.kt[j:], 16, ldk, st.s[t*ld+at+j:], ld, false)
		}
		t += tr
	}
}

// valueTiles sets st.ob's rows [from, to) to the sums of n positions of
// the values v (one head, position by position) weighted by the rows'
// first n scores: one FMA chain over the positions from zero.
func valueTiles(st *sharedState, from, to, n int, v []float32, hd, ld int) {
	for t := from; t < to; {
		kern, tr := tileKern(to - t)
		for j := 0; j < hd; j += 32 {
			kern(n, st.s[t*ld:], ld, 1, v[j:], 16, hd, st.ob[t*hd+j:], hd, false)
		}
		t += tr
	}
}
