package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testAttnDecode checks attnScores and attnMix for a chunk of rows query
// heads of dimension hd over n positions of one head's caches of capacity
// ld ≥ n (kvAt's layout: whole blocks, and a narrower last one when ld%8 >
// 0), against float64 sums (reductionTolerance), with guard values
// everywhere the kernels must not write: past each row's n outputs and
// around the buffers.
func testAttnDecode(t *testing.T, r *rand.Rand, rows, hd, n, pad int) {
	ld := n + pad
	guard := math.Float32frombits(guardBits)
	q, qw := guardedInput(r, rows*hd)
	k, kw := guardedInput(r, max(hd*ld, 1))
	sw := make([]float32, rows*ld+2*guardPad)
	for i := range sw {
		sw[i] = guard
	}
	s := sw[guardPad : guardPad+rows*ld]
	attnScores(rows, s, ld, q, hd, k[:hd*ld], ld, n)
	checkGuards(t, qw, rows*hd, "attnScores q")
	checkGuards(t, kw, max(hd*ld, 1), "attnScores k")
	for i := range sw {
		inRow := i >= guardPad && i < guardPad+rows*ld && (i-guardPad)%ld < n
		if !inRow && math.Float32bits(sw[i]) != guardBits {
			t.Fatalf("attnScores rows=%d hd=%d n=%d ld=%d: element %d outside the scores written (%v)", rows, hd, n, ld, i-guardPad, sw[i])
		}
	}
	for i := 0; i < rows; i++ {
		for p := 0; p < n; p++ {
			var want, abs float64
			for d := 0; d < hd; d++ {
				x := float64(q[i*hd+d]) * float64(k[kvAt(ld, hd, d, p)])
				want += x
				abs += math.Abs(x)
			}
			if got := float64(s[i*ld+p]); !(math.Abs(got-want) <= reductionTolerance(hd, abs)) {
				t.Fatalf("attnScores rows=%d hd=%d n=%d: s[%d][%d] = %v, want %v", rows, hd, n, i, p, got, want)
			}
		}
	}

	// attnMix reads rows of probabilities with stride ld and values
	// position by position, and adds into o.
	pr, pw := guardedInput(r, max(rows*ld, 1))
	v, vw := guardedInput(r, max(hd*ld, 1))
	o, ow := padded(rows*hd, guard)
	o0 := make([]float32, rows*hd)
	randFill(r, o0)
	copy(o, o0)
	attnMix(rows, o, pr[:rows*ld], ld, v[:hd*ld], hd, n)
	checkGuards(t, ow, rows*hd, "attnMix out")
	checkGuards(t, pw, max(rows*ld, 1), "attnMix pr")
	checkGuards(t, vw, max(hd*ld, 1), "attnMix v")
	for i := 0; i < rows; i++ {
		for d := 0; d < hd; d++ {
			want, abs := float64(o0[i*hd+d]), math.Abs(float64(o0[i*hd+d]))
			for p := 0; p < n; p++ {
				x := float64(pr[i*ld+p]) * float64(v[p*hd+d])
				want += x
				abs += math.Abs(x)
			}
			if got := float64(o[i*hd+d]); !(math.Abs(got-want) <= reductionTolerance(n+1, abs)) {
				t.Fatalf("attnMix rows=%d hd=%d n=%d: o[%d][%d] = %v, want %v", rows, hd, n, i, d, got, want)
			}
		}
	}
}

func TestAttnDecode(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 9))
		for _, rows := range []int{1, 2, 4} {
			for _, hd := range []int{1, 2, 3, 4, 6, 7, 8, 16, 24, 32, 33, 64, 128} {
				for n := 0; n <= 130; n += 1 + n/16 {
					testAttnDecode(t, r, rows, hd, n, r.IntN(5))
				}
			}
		}
	})
}

// TestAttnDecodeRowsIndependent: a query row's scores and outputs are the
// same bits whether it is scored alone, in a chunk of two or of four, and
// whatever the other rows hold (AttentionKV relies on it: a group of any
// size is cut into such chunks).
func TestAttnDecodeRowsIndependent(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(8, 1))
		for _, hd := range []int{8, 32, 64} {
			for _, n := range []int{5, 8, 77, 130} {
				q := make([]float32, 4*hd)
				k := make([]float32, hd*n)
				pr := make([]float32, 4*n)
				randFill(r, q)
				randFill(r, k)
				randFill(r, pr)
				var s [3][]float32
				var o [3][]float32
				for c, rows := range []int{4, 2, 1} {
					s[c], o[c] = make([]float32, 4*n), make([]float32, 4*hd)
					for g := 0; g < 4; g += rows {
						attnScores(rows, s[c][g*n:], n, q[g*hd:], hd, k, n, n)
						attnMix(rows, o[c][g*hd:], pr[g*n:], n, k, hd, n)
					}
				}
				for c := 1; c < 3; c++ {
					for i := range s[0] {
						if math.Float32bits(s[c][i]) != math.Float32bits(s[0][i]) {
							t.Fatalf("hd=%d n=%d: score %d differs between chunks of 4 and %d", hd, n, i, []int{4, 2, 1}[c])
						}
					}
					for i := range o[0] {
						if math.Float32bits(o[c][i]) != math.Float32bits(o[0][i]) {
							t.Fatalf("hd=%d n=%d: output %d differs between chunks of 4 and %d", hd, n, i, []int{4, 2, 1}[c])
						}
					}
				}
			}
		}
	})
}

func FuzzAttnDecode(f *testing.F) {
	f.Add(uint64(1), uint8(32), uint16(100), uint8(3), uint8(2))
	f.Add(uint64(2), uint8(7), uint16(9), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, hd uint8, n uint16, pad, rows uint8) {
		h, nn, rr := 1+int(hd)%130, int(n)%700, []int{1, 2, 4}[int(rows)%3]
		eachImpl(t, func(t *testing.T) { testAttnDecode(t, rand.New(rand.NewPCG(seed, 2)), rr, h, nn, int(pad)%9) })
	})
}

// BenchmarkAttnDecode times the score and mix kernels alone on one KV
// head of the base model's shape (hd 32, two query rows) over 640 cached
// positions, which stay in L2: what the kernels reach when memory is not
// the limit.
func BenchmarkAttnDecode(b *testing.B) {
	const rows, hd, n = 2, 32, 640
	r := rand.New(rand.NewPCG(1, 2))
	q, k, s := make([]float32, rows*hd), make([]float32, hd*n), make([]float32, rows*n)
	o := make([]float32, rows*hd)
	randFill(r, q)
	randFill(r, k)
	b.Run("scores", func(b *testing.B) {
		b.SetBytes(int64(4 * hd * n))
		for i := 0; i < b.N; i++ {
			attnScores(rows, s, n, q, hd, k, n, n)
		}
	})
	b.Run("mix", func(b *testing.B) {
		b.SetBytes(int64(4 * hd * n))
		for i := 0; i < b.N; i++ {
			attnMix(rows, o, s, n, k, hd, n)
		}
	})
}

// TestPrefetchRowsChecksBounds: prefetchRows may ask for exactly the rows
// its slice holds, and panics, like a load, for a row reaching past it.
func TestPrefetchRowsChecksBounds(t *testing.T) {
	p := make([]float32, 3*40+33)
	prefetchRows(p, 40, 4, 33) // the last row ends at the slice's end
	prefetchRows(p, 40, 1, 1)
	prefetchRows(p, 40, 0, 33) // nothing asked
	defer func() {
		if recover() == nil {
			t.Error("prefetchRows past the slice's end did not panic")
		}
	}()
	prefetchRows(p, 40, 4, 34)
}

// TestKVLayoutIsABijection: kvAt maps the hd dimensions of the cap
// positions of one head's cache onto its cap·hd elements one to one, with
// every whole block of 8 positions in one contiguous hd·8 range in
// position order (what the kernels stream through), for capacities with
// and without a narrower last block.
func TestKVLayoutIsABijection(t *testing.T) {
	for _, hd := range []int{1, 3, 8, 32} {
		for cap := 1; cap <= 41; cap++ {
			seen := make([]bool, cap*hd)
			for p := 0; p < cap; p++ {
				for d := 0; d < hd; d++ {
					i := kvAt(cap, hd, d, p)
					if i < 0 || i >= cap*hd || seen[i] {
						t.Fatalf("hd=%d cap=%d: (d=%d, p=%d) at %d: outside or taken", hd, cap, d, p, i)
					}
					seen[i] = true
					if b := p &^ 7; b+8 <= cap && (i < b*hd || i >= (b+8)*hd) {
						t.Fatalf("hd=%d cap=%d: (d=%d, p=%d) at %d, outside its block [%d, %d)", hd, cap, d, p, i, b*hd, (b+8)*hd)
					}
				}
			}
		}
	}
}

// TestCacheWriteAndCopyPlaceByLayout: CacheWrite stores dimension d of
// head kh at position p where the layout says (keys: kvAt; values: p·hd+d),
// and CacheCopy moves positions between caches of other capacities and
// offsets, narrower last blocks of keys included.
func TestCacheWriteAndCopyPlaceByLayout(t *testing.T) {
	for _, kind := range []KVKind{Keys, Values} {
		t.Run(kind.String(), func(t *testing.T) { testCachePlacement(t, kind) })
	}
}

func testCachePlacement(t *testing.T, kind KVKind) {
	be := NewCPU()
	const KVH, hd = 2, 5
	val := func(kh, d, p int) float32 { return float32(1000*kh + 100*d + p + 1) }
	at := func(cap, d, p int) int {
		if kind == Values {
			return p*hd + d
		}
		return kvAt(cap, hd, d, p)
	}
	for _, cap := range []int{1, 7, 8, 9, 20, 33} {
		for pos0 := 0; pos0 < cap; pos0 += 3 {
			rows := min(4, cap-pos0)
			src := make([]float32, rows*KVH*hd)
			for r := 0; r < rows; r++ {
				for kh := 0; kh < KVH; kh++ {
					for d := 0; d < hd; d++ {
						src[(r*KVH+kh)*hd+d] = val(kh, d, pos0+r)
					}
				}
			}
			c, in := be.Alloc(KVH*cap*hd), be.Alloc(len(src))
			be.Load(in, src)
			be.CacheWrite(c, in, kind, pos0, rows, KVH, hd, cap)
			got := be.s(c)
			for r := 0; r < rows; r++ {
				for kh := 0; kh < KVH; kh++ {
					for d := 0; d < hd; d++ {
						if x := got[kh*cap*hd+at(cap, d, pos0+r)]; x != val(kh, d, pos0+r) {
							t.Fatalf("cap %d: head %d dim %d position %d holds %v", cap, kh, d, pos0+r, x)
						}
					}
				}
			}
			// To an unaligned place, and to an aligned one (whole blocks
			// copied as ranges when the source is aligned too).
			for _, to := range []int{3, 8} {
				dstCap := cap + 13
				dst := be.Alloc(KVH * dstCap * hd)
				be.CacheCopy(dst, c, kind, to, pos0, rows, KVH, hd, dstCap, cap)
				moved := be.s(dst)
				for r := 0; r < rows; r++ {
					for kh := 0; kh < KVH; kh++ {
						for d := 0; d < hd; d++ {
							if x := moved[kh*dstCap*hd+at(dstCap, d, to+r)]; x != val(kh, d, pos0+r) {
								t.Fatalf("copy %d→%d: head %d dim %d position %d holds %v", cap, dstCap, kh, d, to+r, x)
							}
						}
					}
				}
			}
		}
		// A whole cache, aligned on both sides: whole blocks as ranges,
		// a narrower last block element by element.
		full := make([]float32, cap*KVH*hd)
		for p := 0; p < cap; p++ {
			for kh := 0; kh < KVH; kh++ {
				for d := 0; d < hd; d++ {
					full[(p*KVH+kh)*hd+d] = val(kh, d, p)
				}
			}
		}
		c, in := be.Alloc(KVH*cap*hd), be.Alloc(len(full))
		be.Load(in, full)
		be.CacheWrite(c, in, kind, 0, cap, KVH, hd, cap)
		for _, dstCap := range []int{cap + 8, cap + 13} {
			dst := be.Alloc(KVH * dstCap * hd)
			be.CacheCopy(dst, c, kind, 8, 0, cap, KVH, hd, dstCap, cap)
			moved := be.s(dst)
			for p := 0; p < cap; p++ {
				for kh := 0; kh < KVH; kh++ {
					for d := 0; d < hd; d++ {
						if x := moved[kh*dstCap*hd+at(dstCap, d, 8+p)]; x != val(kh, d, p) {
							t.Fatalf("whole copy %d→%d: head %d dim %d position %d holds %v", cap, dstCap, kh, d, 8+p, x)
						}
					}
				}
			}
		}
	}
}
