package kernels

import "fmt"

// Weights that many products read, such as a model's while it samples, can
// be stored once in the panel order of the GEMM micro-kernel. Products on
// such a matrix skip packing B, read it as contiguous streams, and, since
// one arithmetic serves every m, give a row the same bits whatever the
// other rows of the batch: no RowInvariantRows limit.

// packedPanelGroup is how many 16-column panels a one-row product reads at
// once: four panels are eight independent FMA chains, enough to hide the
// FMA latency.
const packedPanelGroup = 4

// packedSmallM is the most rows a product on packed weights runs one row at
// a time (over groups of four panels) instead of through packed A.
const packedSmallM = 4

// packedRowsMinFlops is the smallest product of a few rows on packed
// weights (decoding a handful of sequences) that is split over threads:
// 128 KFLOP, a 256×256 projection of one row, a few microseconds on one
// core. Such products stream their weights at a few flops per byte, and
// every core added brings its own cache bandwidth; a fork and join costs
// about a microsecond (BenchmarkParallelForkJoin, since helpers spin
// without yielding and the caller spins for them before it parks).
// Measured on the quiet 2-core AVX-512 build machine (docs/PERFORMANCE.md):
// bench-small batch-1 decoding 2,000 tokens/s at a 2 MFLOP threshold,
// 2,400 at 512 KFLOP, 3,000–3,190 at 128 KFLOP, no better below.
const packedRowsMinFlops = 1 << 17

// packedPanelRowsMax is the most rows for which a product on packed weights
// packs all of A at once and streams each B panel whole (runPanels); A then
// takes at most 64×k floats, 196 KB at k = 768.
const packedPanelRowsMax = 64

// PackedNTLen returns how many elements PackNT and PackNTBF16 write for a
// b[n,k]: n rounded up to a multiple of 16, times k.
func PackedNTLen(k, n int) int { return roundUp(n, gemmNR) * k }

// PackNT stores b[n,k], the right operand of an NT product (x·Wᵀ), into dst
// in panel order: 16 rows of b at a time, transposed, so that element
// (j, p) lands at dst[(j/16)*16*k + p*16 + j%16]; the columns past n in the
// last panel are zero. dst needs PackedNTLen(k, n) elements. It panics if a
// slice is too short.
func PackNT(dst, b []float32, k, n int) {
	checkPack("PackNT", len(dst), len(b), k, n)
	Parallel(roundUp(n, gemmNR)/gemmNR, 1, func(q0, q1 int) {
		for q := q0; q < q1; q++ {
			panel := dst[q*gemmNR*k : (q+1)*gemmNR*k]
			w := min(gemmNR, n-q*gemmNR)
			p0 := 0
			if w == gemmNR {
				p0 = packNT16(k, b[q*gemmNR*k:], k, panel)
			}
			for j := 0; j < w; j++ {
				row := b[(q*gemmNR+j)*k : (q*gemmNR+j+1)*k]
				for p := p0; p < k; p++ {
					panel[p*gemmNR+j] = row[p]
				}
			}
			for p := 0; p < k; p++ {
				clear(panel[p*gemmNR+w : p*gemmNR+gemmNR])
			}
		}
	})
}

func checkPack(fn string, ldst, lb, k, n int) {
	if k < 0 || n < 0 {
		panic(fmt.Sprintf("kernels: %s: negative shape k=%d n=%d", fn, k, n))
	}
	if ldst < PackedNTLen(k, n) || lb < k*n {
		panic(fmt.Sprintf("kernels: %s: slice too short for k=%d n=%d: len(dst)=%d (need %d), len(b)=%d (need %d)",
			fn, k, n, ldst, PackedNTLen(k, n), lb, k*n))
	}
}

// GemmPackedNT computes out[m,n] = a[m,k]·b[n,k]ᵀ with b packed by PackNT,
// adding to out when accumulate is set (k = 0 clears out unless
// accumulate). Its results are bit-identical to Gemm(NT, …) on the unpacked
// b for m > RowInvariantRows, and for every m a row's result does not
// depend on the other rows or on the thread count. It panics if a slice is
// too short.
func GemmPackedNT(out, a, bp []float32, m, k, n int, accumulate bool) {
	checkPacked("GemmPackedNT", len(out), len(a), len(bp), m, k, n)
	if trivialGemm(out, m, k, n, accumulate) {
		return
	}
	g := newGemmJob(NT, out[:m*n], a[:m*k], nil, m, k, n, accumulate)
	g.pf = bp[:PackedNTLen(k, n)]
	g.runPacked()
}

func checkPacked(fn string, lout, la, lbp, m, k, n int) {
	if m < 0 || k < 0 || n < 0 {
		panic(fmt.Sprintf("kernels: %s: negative shape m=%d k=%d n=%d", fn, m, k, n))
	}
	if lout < m*n || la < m*k || lbp < PackedNTLen(k, n) {
		panic(fmt.Sprintf("kernels: %s: operand too short for m=%d k=%d n=%d: len(out)=%d (need %d), len(a)=%d (need %d), len(packed b)=%d (need %d)",
			fn, m, k, n, lout, m*n, la, m*k, lbp, PackedNTLen(k, n)))
	}
}

// runPacked runs a product on prepacked B: row by row over groups of four
// panels for a few rows (batch-1 decoding streams B once, with no A to
// pack), panel by panel for a moderate number, the blocked loop beyond.
// All do each element as the micro-kernel does, so the choice changes no
// bit.
func (g *gemmJob) runPacked() {
	if g.m > packedPanelRowsMax {
		g.runParallel()
		return
	}
	work, grain, minFlops := g.runRows, gemmNR*packedPanelGroup, packedRowsMinFlops
	if g.m > packedSmallM && g.useAVX512Loop() {
		// A is read in place but for its last rows, packed once.
		s := scratchPool.Get().(*gemmScratch)
		defer scratchPool.Put(s)
		edge := g.packEdge512(s)
		work = func(j0, j1 int) { g.runPanels512(edge, j0, j1) }
		grain, minFlops = nr512, parallelMinFlops
	} else if g.m > packedSmallM {
		// A is packed once, for all of K, and shared by every thread.
		s := scratchPool.Get().(*gemmScratch)
		defer scratchPool.Put(s)
		m, k := g.m, g.k
		mp := roundUp(m, gemmMR)
		s.ap = grow(s.ap, mp*k)
		for pc := 0; pc < k; pc += g.kc {
			g.packA(s.ap[mp*pc:], 0, m, pc, min(g.kc, k-pc))
		}
		ap := s.ap
		work = func(j0, j1 int) { g.runPanels(ap, j0, j1) }
		grain, minFlops = gemmNR, parallelMinFlops
	}
	if 2*g.m*g.n*g.k < minFlops {
		work(0, g.n)
		return
	}
	if g.m <= packedSmallM && 2*g.m*g.n*g.k >= balancedMinFlops {
		ParallelBalanced(g.n, grain, balancedChunks, work)
		return
	}
	Parallel(g.n, grain, work)
}

// balancedMinFlops and balancedChunks: a product of a few rows
// (packedSmallM) on packed weights of at least this many flops is cut into up to balancedChunks chunks a thread,
// claimed as threads come free (ParallelBalanced), not one share each.
// Batch-1 decoding streams each product's weights from memory, and the
// two threads' streams do not run at the same speed, so with one share
// each the faster thread idled at the end of every product. Measured on
// the 2-core AVX-512 machine, BenchmarkGemmPackedNTBF16/token110M_m1 (a
// 110M model's products for one token, back to back), three rounds
// alternating: 42.9–45.8 GB/s with one share each, 47.4–50.8 with four
// chunks a thread, 46.8–49.3 with eight (docs/PERFORMANCE.md, "Warm
// helpers and balanced chunks for batch-1 decoding"). Below a megaflop
// (a few microseconds) the claims would cost more than the balance saves.
const (
	balancedMinFlops = 1 << 20
	balancedChunks   = 4
)

// runPanels computes out[:, j0:j1] for a moderate number of rows from
// ap, all of A packed for all of K (K block pc at ap[mp*pc:]): each B
// panel is read once, start to end, as one contiguous stream (the blocked
// loop would visit it in K blocks far apart in time). The micro-kernel
// calls and their order per element are those of the blocked loop. j0 is
// a multiple of 16.
func (g *gemmJob) runPanels(ap []float32, j0, j1 int) {
	s := scratchPool.Get().(*gemmScratch)
	defer scratchPool.Put(s)
	m, k, n := g.m, g.k, g.n
	mp := roundUp(m, gemmMR)
	for jr := j0; jr < j1; jr += gemmNR {
		nrc := min(gemmNR, j1-jr)
		for pc := 0; pc < k; pc += g.kc {
			kc := min(g.kc, k-pc)
			add := g.acc || pc > 0
			for ir := 0; ir < m; ir += gemmMR {
				mrc := min(gemmMR, m-ir)
				ap := ap[mp*pc+ir*kc:]
				off := ir*n + jr
				full := mrc == gemmMR && nrc == gemmNR
				c, ldc := g.out[off:], n
				if !full {
					c, ldc = s.tmp[:], gemmNR
				}
				if g.ph != nil {
					off, ldb := bf16Panel(k, n, jr/gemmNR)
					microKernelBF16(kc, ap, g.ph[off+pc*ldb:], ldb, c, ldc, add && full)
				} else {
					microKernel(kc, ap, g.pf[jr*k+pc*gemmNR:], gemmNR, c, ldc, add && full)
				}
				if full {
					continue
				}
				for i := 0; i < mrc; i++ {
					row := g.out[off+i*n : off+i*n+nrc]
					t := s.tmp[i*gemmNR : i*gemmNR+nrc]
					if add {
						for j := range row {
							row[j] += t[j]
						}
					} else {
						copy(row, t)
					}
				}
			}
		}
	}
}

// runRows computes out[:, j0:j1] one row at a time; j0 is a multiple of 64.
func (g *gemmJob) runRows(j0, j1 int) {
	s := scratchPool.Get().(*gemmScratch)
	defer scratchPool.Put(s)
	m, k, n := g.m, g.k, g.n
	const group = packedGroupCols
	for q0 := j0; q0 < j1; q0 += group {
		if q0+group <= j1 {
			for i := 0; i < m; i++ {
				for pc := 0; pc < k; pc += g.kc {
					kc := min(g.kc, k-pc)
					g.rowKernel(kc, g.a[i*k+pc:(i+1)*k], q0, pc, g.out[i*n+q0:i*n+q0+group], g.acc || pc > 0)
				}
			}
			continue
		}
		// Fewer than four panels left: each through the micro-kernel, the
		// rows packed as one 6-row panel padded with zeros.
		for jr := q0; jr < j1; jr += gemmNR {
			nrc := min(gemmNR, j1-jr)
			for pc := 0; pc < k; pc += g.kc {
				kc := min(g.kc, k-pc)
				s.ap = grow(s.ap, kc*gemmMR)
				g.packA(s.ap, 0, m, pc, kc)
				if g.ph != nil {
					off, ldb := bf16Panel(k, n, jr/gemmNR)
					microKernelBF16(kc, s.ap, g.ph[off+pc*ldb:], ldb, s.tmp[:], gemmNR, false)
				} else {
					microKernel(kc, s.ap, g.pf[jr*k+pc*gemmNR:], gemmNR, s.tmp[:], gemmNR, false)
				}
				for i := 0; i < m; i++ {
					row := g.out[i*n+jr : i*n+jr+nrc]
					t := s.tmp[i*gemmNR : i*gemmNR+nrc]
					if g.acc || pc > 0 {
						for j := range row {
							row[j] += t[j]
						}
					} else {
						copy(row, t)
					}
				}
			}
		}
	}
}

// rowKernel runs the one-row kernel on steps pc..pc+kc-1 of the four
// panels from column q0 (a multiple of 64) of the packed B: one group of
// PackNTBF16, four panels k·16 elements apart of PackNT.
func (g *gemmJob) rowKernel(kc int, a []float32, q0, pc int, c []float32, add bool) {
	if g.ph != nil {
		off, ldb := bf16Panel(g.k, g.n, q0/gemmNR)
		rowKernelBF16(kc, a, g.ph[off+pc*ldb:], c, add)
		return
	}
	rowKernel(kc, a, g.pf[q0*g.k+pc*gemmNR:], g.k*gemmNR, c, add)
}
