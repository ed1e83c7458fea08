package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// testKernStrided runs the strided tile (rows 12, panels 2: kern12x32;
// 12, 1: kern12x16; 4, 2: kern4x32) on A with strides rsa, csa and B
// panels boff apart with step ldb, in every implementation this CPU has
// (the AVX2 tiles, the AVX-512 kernels), against the Go twin: each must
// agree with it bit for bit and write nothing outside the tile (guard
// values around and between C's rows).
func testKernStrided(t *testing.T, r *rand.Rand, rows, panels, kc, rsa, csa, ldb, boff, ldc int, add bool) {
	t.Helper()
	guard := math.Float32frombits(guardBits)
	a, aw := guardedInput(r, (rows-1)*rsa+(kc-1)*csa+1)
	b, bw := guardedInput(r, (panels-1)*boff+(kc-1)*ldb+gemmNR)
	w := panels * gemmNR
	c0, _ := padded((rows-1)*ldc+w, guard)
	for i := 0; i < rows; i++ {
		randFill(r, c0[i*ldc:i*ldc+w])
	}
	call := func(c []float32) {
		switch {
		case rows == 4:
			kern4x32(kc, a, rsa, csa, b, boff, ldb, c, ldc, add)
		case panels == 2:
			kern12x32(kc, a, rsa, csa, b, boff, ldb, c, ldc, add)
		default:
			kern12x16(kc, a, rsa, csa, b, ldb, c, ldc, add)
		}
	}
	saved, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = saved, saved512 }()
	useAsm, useAVX512 = false, false
	cGo := append([]float32(nil), c0...)
	call(cGo)
	impls := []struct {
		name         string
		have, avx512 bool
	}{{"AVX2", hasAVX2FMA(), false}, {"AVX-512", hasAVX512(), true}}
	for _, im := range impls {
		if !im.have {
			continue
		}
		useAsm, useAVX512 = true, im.avx512
		cw := make([]float32, len(c0)+2*guardPad)
		for i := range cw {
			cw[i] = guard
		}
		copy(cw[guardPad:], c0)
		cAsm := cw[guardPad : guardPad+len(c0)]
		what := fmt.Sprintf("%s %dx%d kc=%d rsa=%d csa=%d ldb=%d boff=%d ldc=%d add=%v", im.name, rows, w, kc, rsa, csa, ldb, boff, ldc, add)
		call(cAsm)
		checkGuards(t, cw, len(c0), what+" c")
		checkGuards(t, aw, (rows-1)*rsa+(kc-1)*csa+1, what+" a")
		checkGuards(t, bw, (panels-1)*boff+(kc-1)*ldb+gemmNR, what+" b")
		for i := range cAsm {
			inTile := i%ldc < w
			if !inTile && math.Float32bits(cAsm[i]) != guardBits {
				t.Fatalf("%s: element %d between the rows overwritten", what, i)
			}
			if math.Float32bits(cAsm[i]) != math.Float32bits(cGo[i]) {
				t.Fatalf("%s: c[%d,%d] = %v (asm), %v (Go twin)", what, i/ldc, i%ldc, cAsm[i], cGo[i])
			}
		}
	}
}

func TestStridedTilesMatchTwin(t *testing.T) {
	if !hasAVX2FMA() {
		t.Skip("no AVX2 and FMA on this CPU")
	}
	r := rand.New(rand.NewPCG(5, 12))
	for kc := 1; kc <= 130; kc += 1 + kc/8 {
		for _, add := range []bool{false, true} {
			// Row-major A in place, B packed.
			testKernStrided(t, r, 12, 2, kc, kc+3, 1, gemmNR, gemmNR*kc, 37, add)
			testKernStrided(t, r, 4, 2, kc, kc+3, 1, gemmNR, gemmNR*kc, 35, add)
			// A in a 12-row panel, B read in place from a wider matrix.
			testKernStrided(t, r, 12, 2, kc, 1, mr512, 70, gemmNR, 32, add)
			testKernStrided(t, r, 4, 2, kc, 1, mr512, 70, gemmNR, 33, add)
			testKernStrided(t, r, 12, 1, kc, kc, 1, gemmNR, 0, 16, add)
			testKernStrided(t, r, 12, 1, kc, 1, mr512, 33, 0, 40, add)
		}
	}
}

func FuzzStridedTiles(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(3), uint8(0), uint8(7), uint8(2), true)
	f.Add(uint64(2), uint8(129), uint8(0), uint8(1), uint8(0), uint8(1), false)
	f.Add(uint64(3), uint8(17), uint8(2), uint8(5), uint8(3), uint8(0), true)
	f.Fuzz(func(t *testing.T, seed uint64, kc, rpad, bpad, cpad, shape uint8, add bool) {
		if !hasAVX2FMA() {
			t.Skip("no AVX2 and FMA on this CPU")
		}
		r := rand.New(rand.NewPCG(seed, 6))
		k := 1 + int(kc)%130
		sh := [3][2]int{{12, 1}, {12, 2}, {4, 2}}[shape%3]
		rows, panels := sh[0], sh[1]
		ldb := gemmNR + int(bpad)%40
		ldc := panels*gemmNR + int(cpad)%20
		if seed%2 == 0 {
			testKernStrided(t, r, rows, panels, k, k+int(rpad)%9, 1, ldb, gemmNR+int(bpad)%9, ldc, add)
		} else {
			testKernStrided(t, r, rows, panels, k, 1, mr512+int(rpad)%5, ldb, ldb*k+int(bpad)%9, ldc, add)
		}
	})
}

// TestGemmAVX512MatchesAVX2Bits: the AVX-512 loop nest changes the tile
// shape and what is packed, never an element's arithmetic, so Gemm gives
// the same bits with either kernel, in every layout and across the edges.
func TestGemmAVX512MatchesAVX2Bits(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512 on this CPU")
	}
	saved, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = saved, saved512 }()
	useAsm = true
	r := rand.New(rand.NewPCG(8, 9))
	shapes := [][3]int{{24, 1, 1}, {25, 17, 33}, {150, 300, 40}, {64, 65, 130}, {65, 257, 48},
		{100, 256, 768}, {1024, 64, 80}, {37, 770, 47}, {200, 33, 3100}}
	for range 30 {
		shapes = append(shapes, [3]int{24 + r.IntN(130), 1 + r.IntN(300), 1 + r.IntN(130)})
	}
	for _, layout := range []Layout{NN, NT, TN} {
		for _, s := range shapes {
			m, k, n := s[0], s[1], s[2]
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			c0 := make([]float32, m*n)
			randFill(r, a)
			randFill(r, b)
			randFill(r, c0)
			for _, acc := range []bool{false, true} {
				var got [2][]float32
				for i, on := range []bool{false, true} {
					useAVX512 = on
					got[i] = append([]float32(nil), c0...)
					Gemm(layout, got[i], a, b, m, k, n, acc)
				}
				for i := range got[0] {
					if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
						t.Fatalf("%v m=%d k=%d n=%d acc=%v: out[%d] = %v (AVX-512), %v (AVX2)", layout, m, k, n, acc, i, got[1][i], got[0][i])
					}
				}
			}
		}
	}
}

// TestCopyRows checks the packing copies against their Go twin, with guard
// values around the destination and NaN around the source.
func TestCopyRows(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(2, 7))
		for _, w := range []int{12, 16} {
			for kc := 1; kc <= 130; kc += 1 + kc/10 {
				lds := w + r.IntN(9)
				src, sw := guardedInput(r, (kc-1)*lds+w)
				dst, dw := padded(kc*w, math.Float32frombits(guardBits))
				copyRows(w, kc, src, lds, dst)
				checkGuards(t, dw, kc*w, fmt.Sprintf("copyRows w=%d kc=%d dst", w, kc))
				checkGuards(t, sw, (kc-1)*lds+w, fmt.Sprintf("copyRows w=%d kc=%d src", w, kc))
				for p := 0; p < kc; p++ {
					for j := 0; j < w; j++ {
						if dst[p*w+j] != src[p*lds+j] {
							t.Fatalf("copyRows w=%d kc=%d: dst[%d][%d] = %v, want %v", w, kc, p, j, dst[p*w+j], src[p*lds+j])
						}
					}
				}
			}
		}
	})
}

// TestGemmPackedAVX512MatchesAVX2Bits: products on prepacked weights,
// float32 and bf16, at every path's row counts, give the same bits with
// either kernel.
func TestGemmPackedAVX512MatchesAVX2Bits(t *testing.T) {
	if !hasAVX512() {
		t.Skip("no AVX-512 on this CPU")
	}
	saved, saved512 := useAsm, useAVX512
	defer func() { useAsm, useAVX512 = saved, saved512 }()
	useAsm = true
	r := rand.New(rand.NewPCG(4, 4))
	for _, m := range []int{1, 4, 5, 12, 13, 24, 37, 64, 65, 100} {
		for _, kn := range [][2]int{{1, 1}, {17, 33}, {256, 48}, {300, 80}, {64, 200}, {600, 130}} {
			k, n := kn[0], kn[1]
			a := make([]float32, m*k)
			b := make([]float32, k*n)
			randFill(r, a)
			randFill(r, b)
			bp := make([]float32, PackedNTLen(k, n))
			PackNT(bp, b, k, n)
			c0 := make([]float32, m*n)
			randFill(r, c0)
			bh := make([]BF16, PackedNTLen(k, n))
			PackNTBF16(bh, b, k, n)
			for _, half := range []bool{false, true} {
				var got [2][]float32
				for i, on := range []bool{false, true} {
					useAVX512 = on
					got[i] = append([]float32(nil), c0...)
					if half {
						GemmPackedNTBF16(got[i], a, bh, m, k, n, true)
					} else {
						GemmPackedNT(got[i], a, bp, m, k, n, true)
					}
				}
				for i := range got[0] {
					if math.Float32bits(got[0][i]) != math.Float32bits(got[1][i]) {
						t.Fatalf("m=%d k=%d n=%d bf16=%v: out[%d] = %v (AVX-512), %v (AVX2)", m, k, n, half, i, got[1][i], got[0][i])
					}
				}
			}
		}
	}
}
