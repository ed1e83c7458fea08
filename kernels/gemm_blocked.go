package kernels

import "sync"

// Blocking of the packed GEMM (the BLIS loop nest): a KC×16 micro-panel of
// B stays in L1 while the 6-row micro-panels of an MC×KC block of A stream
// from L2, and the KC×NC block of B sits in L2/L3.
const (
	gemmMR = 6    // rows of the register tile
	gemmNR = 16   // columns of the register tile (two ymm)
	gemmKC = 256  // largest K block: a 16-column micro-panel is 16 KB
	gemmMC = 144  // rows of A per block: 144×256 floats = 144 KB
	gemmNC = 3072 // columns of B per block

	// NT products with fewer rows than this use dot-product tiles: with so
	// few rows to reuse it, transposing B into panels costs more than the
	// micro-kernel saves.
	smallMNT = 24

	// NN and TN products with at most this many rows read B unpacked.
	directBMaxM = 64

	// Below this many flops a product runs on the calling goroutine: the
	// fork costs more than it saves.
	parallelMinFlops = 1 << 18
)

// gemmScratch is one goroutine's pack buffers; sync.Pool recycles them so a
// steady stream of products allocates nothing.
type gemmScratch struct {
	ap, bp []float32
	tmp    [gemmMR * gemmNR]float32
	tmp512 [mr512 * nr512]float32
}

var scratchPool = sync.Pool{New: func() any { return new(gemmScratch) }}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func roundUp(x, q int) int { return (x + q - 1) / q * q }

type gemmJob struct {
	layout    Layout
	out, a, b []float32
	m, k, n   int
	kc        int // K block, the same for every thread
	acc       bool
	// directB makes the micro-kernel read full 16-column panels of a [k,n]
	// B in place: with few rows of A a panel is reused only a few times,
	// and copying it costs more than the strided reads it avoids.
	directB bool
	// bh, when set, replaces b: an NT or NN product whose B is bf16,
	// widened while it is packed (never read in place: directB is off).
	bh []BF16
	// pf or ph, when set, replace b: B already in panel order (PackNT,
	// PackNTBF16), read in place by the micro-kernel.
	pf []float32
	ph []BF16
}

// gemm runs a product whose shapes are checked and non-empty. The path and
// the K blocking depend on the shape only, never on the thread count.
func gemm(layout Layout, out, a, b []float32, m, k, n int, acc bool) {
	if layout == NT && m < smallMNT {
		dotTilesNT(out, a, b, m, k, n, acc, &f32Tiles, false)
		return
	}
	newGemmJob(layout, out, a, b, m, k, n, acc).runParallel()
}

// gemmSerial is Gemm on the calling goroutine only, for products inside
// work that is already split over threads (attention, per sequence and
// head): a nested fork would only add goroutines. Same path, same bits.
func gemmSerial(layout Layout, out, a, b []float32, m, k, n int, acc bool) {
	checkGemm("Gemm", layout, len(out), len(a), len(b), m, k, n)
	if trivialGemm(out, m, k, n, acc) {
		return
	}
	out, a, b = out[:m*n], a[:m*k], b[:k*n]
	if layout == NT && m < smallMNT {
		dotTilesNT(out, a, b, m, k, n, acc, &f32Tiles, true)
		return
	}
	newGemmJob(layout, out, a, b, m, k, n, acc).run(0, m, 0, n)
}

func newGemmJob(layout Layout, out, a, b []float32, m, k, n int, acc bool) *gemmJob {
	kb := (k + gemmKC - 1) / gemmKC
	return &gemmJob{layout: layout, out: out, a: a, b: b, m: m, k: k, n: n, kc: (k + kb - 1) / kb, acc: acc,
		directB: layout != NT && m <= directBMaxM}
}

// runParallel splits the product over threads along N or M.
func (g *gemmJob) runParallel() {
	m, k, n := g.m, g.k, g.n
	t := Threads()
	mr, nr := gemmMR, gemmNR
	if g.useAVX512Loop() {
		mr, nr = mr512, nr512
	}
	mt := (m + mr - 1) / mr
	nt := (n + nr - 1) / nr
	switch {
	case t == 1 || 2*m*n*k < parallelMinFlops:
		g.run(0, m, 0, n)
	case g.useAVX512Loop() && g.layout == TN && m > n && mt >= 4*t:
		// The AVX-512 loop packs only TN's A, and B's panels: split the
		// larger of the two, so that each thread packs its share of A
		// and only the smaller B whole.
		Parallel(m, mr, func(lo, hi int) { g.run(lo, hi, 0, n) })
	case nt >= 4*t || nt >= mt:
		// Splitting N, each thread packs only its own columns of B and
		// all of A's rows, which it reuses across those columns.
		Parallel(n, nr, func(lo, hi int) { g.run(0, m, lo, hi) })
	default:
		// Too few columns to share: each thread packs all of B.
		Parallel(m, mr, func(lo, hi int) { g.run(lo, hi, 0, n) })
	}
}

// run computes out[i0:i1, j0:j1] over the whole of K.
func (g *gemmJob) run(i0, i1, j0, j1 int) {
	if g.useAVX512Loop() {
		g.run512(i0, i1, j0, j1)
		return
	}
	s := scratchPool.Get().(*gemmScratch)
	defer scratchPool.Put(s)
	for jc := j0; jc < j1; jc += gemmNC {
		nc := min(gemmNC, j1-jc)
		for pc := 0; pc < g.k; pc += g.kc {
			kc := min(g.kc, g.k-pc)
			add := g.acc || pc > 0
			if g.pf == nil && g.ph == nil {
				s.bp = grow(s.bp, kc*roundUp(nc, gemmNR))
				g.packB(s.bp, pc, kc, jc, nc)
			}
			for ic := i0; ic < i1; ic += gemmMC {
				mc := min(gemmMC, i1-ic)
				s.ap = grow(s.ap, kc*roundUp(mc, gemmMR))
				g.packA(s.ap, ic, mc, pc, kc)
				g.macro(s, ic, mc, pc, jc, nc, kc, add)
			}
		}
	}
}

// macro multiplies a packed MC×KC block of A by a packed KC×NC block of B
// into out. Edge tiles go through tmp so the micro-kernel never writes
// outside out; their elements get exactly the same operations as a full
// tile's, which keeps results independent of where the tile edges fall.
func (g *gemmJob) macro(s *gemmScratch, ic, mc, pc, jc, nc, kc int, add bool) {
	n := g.n
	for jr := 0; jr < nc; jr += gemmNR {
		nrc := min(gemmNR, nc-jr)
		var bp []float32
		var bh []BF16
		ldb := gemmNR
		switch {
		case g.pf != nil:
			// A prepacked panel holds all of K: step to this block.
			bp = g.pf[(jc+jr)*g.k+pc*gemmNR:]
		case g.ph != nil:
			off, ld := bf16Panel(g.k, n, (jc+jr)/gemmNR)
			bh, ldb = g.ph[off+pc*ld:], ld
		case g.directB && nrc == gemmNR:
			bp, ldb = g.b[(pc)*n+jc+jr:], n
		default:
			bp = s.bp[jr*kc:]
		}
		tile := func(ap []float32, c []float32, ldc int, add bool) {
			if bh != nil {
				microKernelBF16(kc, ap, bh, ldb, c, ldc, add)
			} else {
				microKernel(kc, ap, bp, ldb, c, ldc, add)
			}
		}
		for ir := 0; ir < mc; ir += gemmMR {
			mrc := min(gemmMR, mc-ir)
			ap := s.ap[ir*kc:]
			off := (ic+ir)*n + jc + jr
			if mrc == gemmMR && nrc == gemmNR {
				tile(ap, g.out[off:], n, add)
				continue
			}
			tile(ap, s.tmp[:], gemmNR, false)
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

// packB copies B[pc:pc+kc, jc:jc+nc] into 16-column micro-panels: element
// (p, j) of panel q lands at bp[q*16*kc + p*16 + j]; missing columns of the
// last panel are zero.
func (g *gemmJob) packB(bp []float32, pc, kc, jc, nc int) {
	n, k := g.n, g.k
	for jr := 0; jr < nc; jr += gemmNR {
		w := min(gemmNR, nc-jr)
		dst := bp[jr*kc : jr*kc+kc*gemmNR]
		if g.layout == NT {
			// b is [n,k]: column j of the panel is a contiguous row of b.
			if g.bh != nil {
				p0 := 0
				if w == gemmNR {
					p0 = packNT16BF16(kc, g.bh[(jc+jr)*k+pc:], k, dst)
				}
				for j := 0; j < w; j++ {
					src := g.bh[(jc+jr+j)*k+pc:]
					src = src[p0:kc]
					for p, v := range src {
						dst[(p0+p)*gemmNR+j] = bf16ToFloat(v)
					}
				}
			} else {
				p0 := 0
				if w == gemmNR {
					p0 = packNT16(kc, g.b[(jc+jr)*k+pc:], k, dst)
				}
				for j := 0; j < w; j++ {
					src := g.b[(jc+jr+j)*k+pc:]
					src = src[p0:kc]
					for p, v := range src {
						dst[(p0+p)*gemmNR+j] = v
					}
				}
			}
			if w < gemmNR {
				for p := 0; p < kc; p++ {
					clear(dst[p*gemmNR+w : p*gemmNR+gemmNR])
				}
			}
			continue
		}
		// b is [k,n]: each p is a contiguous run of the panel's columns.
		if g.bh != nil {
			src := g.bh[pc*n+jc+jr:]
			if w == gemmNR && packNN16BF16(kc, src, n, dst) {
				continue
			}
			for p := 0; p < kc; p++ {
				d := dst[p*gemmNR : p*gemmNR+gemmNR]
				for j, v := range src[p*n : p*n+w] {
					d[j] = bf16ToFloat(v)
				}
				clear(d[w:])
			}
			continue
		}
		src := g.b[pc*n+jc+jr:]
		if w == gemmNR {
			if g.directB {
				continue // read in place by macro
			}
			copyRows(gemmNR, kc, src, n, dst)
			continue
		}
		for p := 0; p < kc; p++ {
			d := dst[p*gemmNR : p*gemmNR+gemmNR]
			copy(d, src[p*n:p*n+w])
			clear(d[w:])
		}
	}
}

// packA copies A[ic:ic+mc, pc:pc+kc] (in the layout's storage) into 6-row
// micro-panels: element (i, p) of panel r lands at ap[r*6*kc + p*6 + i];
// missing rows of the last panel are zero.
func (g *gemmJob) packA(ap []float32, ic, mc, pc, kc int) {
	m, k := g.m, g.k
	for ir := 0; ir < mc; ir += gemmMR {
		h := min(gemmMR, mc-ir)
		dst := ap[ir*kc : ir*kc+kc*gemmMR]
		if g.layout == TN {
			// a is [k,m]: the panel's rows at one p are contiguous.
			src := g.a[pc*m+ic+ir:]
			if h == gemmMR {
				// Element by element: a 24-byte array copy compiles to a
				// call to memmove, which cost more than the copy.
				for p := 0; p < kc; p++ {
					d, r := (*[gemmMR]float32)(dst[p*gemmMR:]), (*[gemmMR]float32)(src[p*m:])
					d[0], d[1], d[2], d[3], d[4], d[5] = r[0], r[1], r[2], r[3], r[4], r[5]
				}
				continue
			}
			for p := 0; p < kc; p++ {
				d := dst[p*gemmMR : p*gemmMR+gemmMR]
				copy(d, src[p*m:p*m+h])
				clear(d[h:])
			}
			continue
		}
		// a is [m,k]: row i of the panel is a contiguous row of a.
		if h == gemmMR {
			// A full panel: write it in order, reading its six rows side
			// by side (one strided store per element costs twice as much).
			row := func(i int) []float32 { return g.a[(ic+ir+i)*k+pc:][:kc] }
			r0, r1, r2, r3, r4, r5 := row(0), row(1), row(2), row(3), row(4), row(5)
			for p := range r0 {
				d := (*[gemmMR]float32)(dst[p*gemmMR:])
				d[0], d[1], d[2], d[3], d[4], d[5] = r0[p], r1[p], r2[p], r3[p], r4[p], r5[p]
			}
			continue
		}
		for i := 0; i < h; i++ {
			src := g.a[(ic+ir+i)*k+pc:]
			src = src[:kc]
			for p, v := range src {
				dst[p*gemmMR+i] = v
			}
		}
		for i := h; i < gemmMR; i++ {
			for p := 0; p < kc; p++ {
				dst[p*gemmMR+i] = 0
			}
		}
	}
}

// dotRowBlock is how many rows of a one pass over B serves: 48 rows of
// k = 768 floats (147 KB) stay in L2 while B streams through once per pass.
const dotRowBlock = 48

// dotTileKernels are the tile kernels for one element type of B. Both
// tiles sum each dot product in the same 8 lanes and reduce the lanes the
// same way, so a row gets the same bits whichever tile computes it.
type dotTileKernels[T float32 | uint16] struct {
	// t34 computes 3 rows of a against 4 rows of B over k8 columns.
	t34 func(k8 int, a *[3][]float32, b *[4][]T, c *[12]float32)
	// t18 computes 1 row of a against 8 rows of B; next is where the
	// following tile's rows start (a prefetch hint, may be empty).
	t18   func(k8 int, a []float32, b *[8][]T, next []T, c *[8]float32)
	widen func(T) float32
}

var f32Tiles = dotTileKernels[float32]{dotTile3x4, dotTile1x8, func(x float32) float32 { return x }}

// dotTilesNT computes out = a·bᵀ from dot-product tiles, b of float32 or
// bf16 elements: B is read once per block of rows while the rows of a stay
// in cache. Groups of three rows use 3×4 tiles and a single row left over
// (the whole of batch-1 decoding) uses 1×8 tiles, which waste no lanes. The
// first k&^7 products of a sum come from a kernel, the rest are added in
// order in Go. N is split over threads in multiples of 8 unless serial.
func dotTilesNT[T float32 | uint16](out, a []float32, b []T, m, k, n int, acc bool, kern *dotTileKernels[T], serial bool) {
	k8 := k &^ 7
	// store writes the sums of one tile row into o, first adding the
	// products past k8 in order (none when k is a multiple of 8, the usual
	// case, which then skips the per-element calls).
	store := func(o, c []float32, x []float32, y [][]T) {
		if k8 < k {
			for j := range o {
				s := c[j]
				for p, v := range y[j][k8:k] {
					s += x[k8+p] * kern.widen(v)
				}
				c[j] = s
			}
		}
		c = c[:len(o)]
		if acc {
			for j, v := range c {
				o[j] += v
			}
		} else {
			copy(o, c)
		}
	}
	work := func(j0, j1 int) {
		// The tile kernels are called through function values, so the
		// arrays passed to them escape: declare them once per call, not
		// once per tile (an allocation per tile cost 10-25 % of decoding).
		var c12 [12]float32
		var c8 [8]float32
		var br [8][]T
		var ar [3][]float32
		for i0 := 0; i0 < m; i0 += dotRowBlock {
			i1 := min(m, i0+dotRowBlock)
			for jb := j0; jb < j1; jb += 8 {
				nb := min(8, j1-jb)
				for j := range br {
					// Missing columns repeat the last; their sums are dropped.
					jj := jb + min(j, nb-1)
					br[j] = b[jj*k : jj*k+k]
				}
				var next []T
				if e := (jb + 8) * k; e < len(b) {
					next = b[e:]
				}
				for ib := i0; ib < i1; ib += 3 {
					mb := min(3, i1-ib)
					if mb == 1 {
						x := a[ib*k : ib*k+k]
						if k8 > 0 {
							kern.t18(k8, x, &br, next, &c8)
						} else {
							c8 = [8]float32{}
						}
						store(out[ib*n+jb:ib*n+jb+nb], c8[:], x, br[:])
						continue
					}
					for i := range ar {
						ii := ib + min(i, mb-1)
						ar[i] = a[ii*k : ii*k+k]
					}
					for h := 0; h < nb; h += 4 {
						if k8 > 0 {
							kern.t34(k8, &ar, (*[4][]T)(br[h:h+4]), &c12)
						} else {
							c12 = [12]float32{}
						}
						w := min(4, nb-h)
						for i := 0; i < mb; i++ {
							store(out[(ib+i)*n+jb+h:(ib+i)*n+jb+h+w], c12[i*4:i*4+4], ar[i], br[h:h+4])
						}
					}
				}
			}
		}
	}
	if serial || 2*m*n*k < parallelMinFlops {
		work(0, n)
		return
	}
	Parallel(n, 8, work)
}
