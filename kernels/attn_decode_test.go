package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testAttnDecode4 checks attnScores4 and attnMix4 for head dimension hd
// over n positions of caches with row stride ld ≥ n, against float64
// sums (reductionTolerance), with guard values everywhere the kernels must
// not write: past each row's n outputs and around the buffers.
func testAttnDecode4(t *testing.T, r *rand.Rand, hd, n, pad int) {
	ld := n + pad
	guard := math.Float32frombits(guardBits)
	q, qw := guardedInput(r, 4*hd)
	k, kw := guardedInput(r, max(hd*ld, 1))
	sw := make([]float32, 4*ld+2*guardPad)
	for i := range sw {
		sw[i] = guard
	}
	s := sw[guardPad : guardPad+4*ld]
	attnScores4(s, ld, q, hd, k[:hd*ld], ld, n)
	checkGuards(t, qw, 4*hd, "attnScores4 q")
	checkGuards(t, kw, max(hd*ld, 1), "attnScores4 k")
	for i := range sw {
		inRow := i >= guardPad && i < guardPad+4*ld && (i-guardPad)%ld < n
		if !inRow && math.Float32bits(sw[i]) != guardBits {
			t.Fatalf("attnScores4 hd=%d n=%d ld=%d: element %d outside the scores written (%v)", hd, n, ld, i-guardPad, sw[i])
		}
	}
	for i := 0; i < 4; i++ {
		for p := 0; p < n; p++ {
			var want, abs float64
			for d := 0; d < hd; d++ {
				x := float64(q[i*hd+d]) * float64(k[d*ld+p])
				want += x
				abs += math.Abs(x)
			}
			if got := float64(s[i*ld+p]); !(math.Abs(got-want) <= reductionTolerance(hd, abs)) {
				t.Fatalf("attnScores4 hd=%d n=%d: s[%d][%d] = %v, want %v", hd, n, i, p, got, want)
			}
		}
	}

	// attnMix4 reads four rows of probabilities with stride ld.
	pr, pw := guardedInput(r, max(4*ld, 1))
	v, vw := guardedInput(r, max(hd*ld, 1))
	o, ow := padded(4*hd, guard)
	attnMix4(o, pr[:4*ld], ld, v[:hd*ld], ld, hd, n)
	checkGuards(t, ow, 4*hd, "attnMix4 out")
	checkGuards(t, pw, max(4*ld, 1), "attnMix4 pr")
	checkGuards(t, vw, max(hd*ld, 1), "attnMix4 v")
	for i := 0; i < 4; i++ {
		for d := 0; d < hd; d++ {
			var want, abs float64
			for p := 0; p < n; p++ {
				x := float64(pr[i*ld+p]) * float64(v[d*ld+p])
				want += x
				abs += math.Abs(x)
			}
			if got := float64(o[i*hd+d]); !(math.Abs(got-want) <= reductionTolerance(n, abs)) {
				t.Fatalf("attnMix4 hd=%d n=%d: o[%d][%d] = %v, want %v", hd, n, i, d, got, want)
			}
		}
	}
}

func TestAttnDecode4(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 9))
		for _, hd := range []int{1, 2, 3, 7, 8, 16, 32, 33, 64, 128} {
			for n := 0; n <= 130; n += 1 + n/16 {
				testAttnDecode4(t, r, hd, n, r.IntN(5))
			}
		}
	})
}

// TestAttnDecode4RowsIndependent: a query row's scores and outputs do
// not depend on the other three rows (AttentionKV relies on it).
func TestAttnDecode4RowsIndependent(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(8, 1))
		hd, n := 32, 77
		q := make([]float32, 4*hd)
		k := make([]float32, hd*n)
		pr := make([]float32, 4*n)
		randFill(r, q)
		randFill(r, k)
		randFill(r, pr)
		s1, o1 := make([]float32, 4*n), make([]float32, 4*hd)
		attnScores4(s1, n, q, hd, k, n, n)
		attnMix4(o1, pr, n, k, n, hd, n)
		randFill(r, q[hd:])
		randFill(r, pr[n:])
		s2, o2 := make([]float32, 4*n), make([]float32, 4*hd)
		attnScores4(s2, n, q, hd, k, n, n)
		attnMix4(o2, pr, n, k, n, hd, n)
		for p := 0; p < n; p++ {
			if math.Float32bits(s1[p]) != math.Float32bits(s2[p]) {
				t.Fatalf("score %d of row 0 changed with the other rows", p)
			}
		}
		for d := 0; d < hd; d++ {
			if math.Float32bits(o1[d]) != math.Float32bits(o2[d]) {
				t.Fatalf("output %d of row 0 changed with the other rows", d)
			}
		}
	})
}

func FuzzAttnDecode4(f *testing.F) {
	f.Add(uint64(1), uint8(32), uint16(100), uint8(3))
	f.Add(uint64(2), uint8(7), uint16(9), uint8(0))
	f.Fuzz(func(t *testing.T, seed uint64, hd uint8, n uint16, pad uint8) {
		h, nn := 1+int(hd)%130, int(n)%700
		eachImpl(t, func(t *testing.T) { testAttnDecode4(t, rand.New(rand.NewPCG(seed, 2)), h, nn, int(pad)%9) })
	})
}
