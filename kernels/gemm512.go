package kernels

// The AVX-512 loop nest. Its register tile is 12 rows by two 16-column
// panels: 24 accumulators of 16 lanes, fed per step by two loads of B and
// twelve broadcasts of A. B is packed into the same 16-column panels as
// for the AVX2 kernel (and prepacked weights are read as they are); A in
// the NN and NT layouts, row-major, is read in place (its rows are
// contiguous streams that stay in L2 while B's panels sweep past), so only
// TN's A, strided by m, and the last rows of a block are packed, into
// 12-row panels. Every element is the FMA chain the AVX2 kernel computes
// for it, added to out per K block the same way: the two loops give the
// same bits.
const (
	mr512 = 12 // rows of the register tile
	nr512 = 32 // columns: two B panels
)

// useAVX512Loop says whether g runs on the AVX-512 loop nest: bf16 panels
// prepacked for the AVX2 kernel (ph) stay on it.
func (g *gemmJob) useAVX512Loop() bool { return useAVX512 && g.ph == nil }

// bKind says where a 16-column B panel of the current K block lives.
type bKind int

const (
	bPacked  bKind = iota // s.bp, packed for this block
	bInPlace              // g.b, a full panel of an NN/TN product read in place
	bPrepack              // g.pf, prepacked for all of K
)

// run512 computes out[i0:i1, j0:j1] over the whole of K.
func (g *gemmJob) run512(i0, i1, j0, j1 int) {
	s := scratchPool.Get().(*gemmScratch)
	defer scratchPool.Put(s)
	for jc := j0; jc < j1; jc += gemmNC {
		nc := min(gemmNC, j1-jc)
		for pc := 0; pc < g.k; pc += g.kc {
			kc := min(g.kc, g.k-pc)
			add := g.acc || pc > 0
			if g.pf == nil {
				s.bp = grow(s.bp, kc*roundUp(nc, gemmNR))
				g.packB(s.bp, pc, kc, jc, nc)
			}
			for ic := i0; ic < i1; ic += gemmMC {
				mc := min(gemmMC, i1-ic)
				g.packA512(s, ic, mc, pc, kc)
				g.macro512(s, ic, mc, pc, jc, nc, kc, add)
			}
		}
	}
}

// packA512 packs what macro512 cannot read in place: all of A[ic:ic+mc,
// pc:pc+kc] for TN, only the rows past the last full 12 for NN and NT.
// Panel r holds element (i, p) at s.ap[r*12*kc + p*12 + i]; missing rows
// are zero.
func (g *gemmJob) packA512(s *gemmScratch, ic, mc, pc, kc int) {
	m, k := g.m, g.k
	r0 := 0 // first row packed
	if g.layout != TN {
		r0 = mc - mc%mr512
	}
	if r0 == mc {
		return
	}
	s.ap = grow(s.ap, kc*roundUp(mc-r0, mr512))
	for ir := r0; ir < mc; ir += mr512 {
		h := min(mr512, mc-ir)
		dst := s.ap[(ir-r0)*kc : (ir-r0)*kc+kc*mr512]
		if g.layout == TN {
			// a is [k,m]: the panel's rows at one p are contiguous.
			src := g.a[pc*m+ic+ir:]
			if h == mr512 {
				copyRows(mr512, kc, src, m, dst)
				continue
			}
			for p := 0; p < kc; p++ {
				d := dst[p*mr512 : p*mr512+mr512]
				copy(d, src[p*m:p*m+h])
				clear(d[h:])
			}
			continue
		}
		for i := 0; i < h; i++ {
			for p, v := range g.a[(ic+ir+i)*k+pc : (ic+ir+i)*k+pc+kc] {
				dst[p*mr512+i] = v
			}
		}
		for p := 0; p < kc; p++ {
			clear(dst[p*mr512+h : p*mr512+mr512])
		}
	}
}

// aTile returns where the 12-row tile at row ir of the block starts and
// its strides.
func (g *gemmJob) aTile(s *gemmScratch, ic, mc, ir, pc, kc int) (a []float32, rsa, csa int) {
	if g.layout != TN && ir+mr512 <= mc {
		return g.a[(ic+ir)*g.k+pc:], g.k, 1
	}
	r0 := 0
	if g.layout != TN {
		r0 = mc - mc%mr512
	}
	return s.ap[(ir-r0)*kc:], 1, mr512
}

// bPanel returns where the 16-column panel at column jr of the block
// starts (an offset into the slice of its kind) and its step.
func (g *gemmJob) bPanel(jr, nc, jc, pc, kc int) (kind bKind, off, ldb int) {
	switch {
	case g.pf != nil:
		return bPrepack, (jc+jr)*g.k + pc*gemmNR, gemmNR
	case g.directB && jr+gemmNR <= nc:
		return bInPlace, pc*g.n + jc + jr, g.n
	}
	return bPacked, jr * kc, gemmNR
}

func (g *gemmJob) bSlice(s *gemmScratch, kind bKind) []float32 {
	switch kind {
	case bPrepack:
		return g.pf
	case bInPlace:
		return g.b
	}
	return s.bp
}

// macro512 multiplies A[ic:ic+mc, pc:pc+kc] by the B block of columns
// jc:jc+nc into out: for each pair of B panels (kept in L1), every 12-row
// tile of A. Tiles that reach past out go through s.tmp512, with the same
// operations per element.
func (g *gemmJob) macro512(s *gemmScratch, ic, mc, pc, jc, nc, kc int, add bool) {
	n := g.n
	for jr := 0; jr < nc; jr += nr512 {
		nrc := min(nr512, nc-jr)
		k0, o0, ldb := g.bPanel(jr, nc, jc, pc, kc)
		b := g.bSlice(s, k0)[o0:]
		pair := nrc > gemmNR
		boff := 0
		if pair {
			k1, o1, ldb1 := g.bPanel(jr+gemmNR, nc, jc, pc, kc)
			if k1 == k0 && ldb1 == ldb {
				boff = o1 - o0
			} else {
				// An in-place panel beside a packed one (an NN or TN
				// product whose last panel is partial): one at a time.
				g.tiles16(s, ic, mc, pc, jc, jr, nc, kc, add)
				g.tiles16(s, ic, mc, pc, jc, jr+gemmNR, nc, kc, add)
				continue
			}
		}
		for ir := 0; ir < mc; ir += mr512 {
			a, rsa, csa := g.aTile(s, ic, mc, ir, pc, kc)
			g.tile512(s, kc, a, rsa, csa, min(mr512, mc-ir), nrc, b, boff, ldb, (ic+ir)*n+jc+jr, add)
		}
	}
}

// tiles16 is macro512's loop for the single panel at column jr.
func (g *gemmJob) tiles16(s *gemmScratch, ic, mc, pc, jc, jr, nc, kc int, add bool) {
	n := g.n
	nrc := min(gemmNR, nc-jr)
	kind, o, ldb := g.bPanel(jr, nc, jc, pc, kc)
	b := g.bSlice(s, kind)[o:]
	for ir := 0; ir < mc; ir += mr512 {
		a, rsa, csa := g.aTile(s, ic, mc, ir, pc, kc)
		g.tile512(s, kc, a, rsa, csa, min(mr512, mc-ir), nrc, b, 0, ldb, (ic+ir)*n+jc+jr, add)
	}
}

// tile512 computes the tile of out at off (row stride n) of mrc ≤ 12 rows
// and nrc ≤ 32 columns, one K block of kc steps, from A (a, rsa, csa; a
// tile of fewer than 12 rows is a zero-padded 12-row panel, rsa = 1) and
// one B panel or two boff apart (nrc > 16), adding to out when add. A full
// tile goes straight into out; one of fewer rows and a whole pair of
// panels runs four rows at a time on the 4-row tile, straight into out
// where four rows are real (a 12-row tile spends as long on missing rows
// as on real ones: a product of 64 rows took as long as one of 72); the
// rest goes through s.tmp512. Every element is the same FMA chain.
func (g *gemmJob) tile512(s *gemmScratch, kc int, a []float32, rsa, csa, mrc, nrc int, b []float32, boff, ldb, off int, add bool) {
	n := g.n
	if mrc < mr512 && nrc == nr512 {
		for i0 := 0; i0 < mrc; i0 += 4 {
			o := off + i0*n
			if mrc-i0 >= 4 {
				kern4x32(kc, a[i0*rsa:], rsa, csa, b, boff, ldb, g.out[o:], n, add)
				continue
			}
			kern4x32(kc, a[i0*rsa:], rsa, csa, b, boff, ldb, s.tmp512[:], nr512, false)
			s.flush512(g.out[o:], n, mrc-i0, nr512, add)
		}
		return
	}
	full := mrc == mr512 && (nrc == nr512 || nrc == gemmNR)
	c, ldc, cadd := g.out[off:], n, add
	if !full {
		c, ldc, cadd = s.tmp512[:], nr512, false
	}
	if nrc > gemmNR {
		kern12x32(kc, a, rsa, csa, b, boff, ldb, c, ldc, cadd)
	} else {
		kern12x16(kc, a, rsa, csa, b, ldb, c, ldc, cadd)
	}
	if !full {
		s.flush512(g.out[off:], n, mrc, nrc, add)
	}
}

// flush512 writes (or adds) the first h rows and w columns of tmp512 to
// out, row stride n.
func (s *gemmScratch) flush512(out []float32, n, h, w int, add bool) {
	for i := 0; i < h; i++ {
		row := out[i*n : i*n+w]
		t := s.tmp512[i*nr512 : i*nr512+w]
		if add {
			for j := range row {
				row[j] += t[j]
			}
		} else {
			copy(row, t)
		}
	}
}

// packEdge512 packs the rows of A past the last full 12, for all of K, into
// one 12-row panel (element (i, p) at p*12+i, missing rows zero) and
// returns it; nil when m is a multiple of 12.
func (g *gemmJob) packEdge512(s *gemmScratch) []float32 {
	m, k := g.m, g.k
	r0 := m - m%mr512
	if r0 == m {
		return nil
	}
	s.ap = grow(s.ap, mr512*k)
	clear(s.ap)
	for i := r0; i < m; i++ {
		for p, v := range g.a[i*k : i*k+k] {
			s.ap[p*mr512+i-r0] = v
		}
	}
	return s.ap
}

// runPanels512 is runPanels on the AVX-512 tile: for each pair of
// prepacked B panels (jr, jr+16), K block by K block, every 12-row tile of
// A, read in place (the last rows from edge, see packEdge512). j0 is a
// multiple of 32.
func (g *gemmJob) runPanels512(edge []float32, j0, j1 int) {
	s := scratchPool.Get().(*gemmScratch)
	defer scratchPool.Put(s)
	m, k, n := g.m, g.k, g.n
	for jr := j0; jr < j1; jr += nr512 {
		nrc := min(nr512, j1-jr)
		for pc := 0; pc < k; pc += g.kc {
			kc := min(g.kc, k-pc)
			add := g.acc || pc > 0
			b := g.pf[jr*k+pc*gemmNR:]
			for ir := 0; ir < m; ir += mr512 {
				a, rsa, csa := g.a[ir*k+pc:], k, 1
				if ir+mr512 > m {
					a, rsa, csa = edge[pc*mr512:], 1, mr512
				}
				g.tile512(s, kc, a, rsa, csa, min(mr512, m-ir), nrc, b, gemmNR*k, gemmNR, ir*n+jr, add)
			}
		}
	}
}
