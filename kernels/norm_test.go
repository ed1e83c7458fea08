package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// testNormKernels checks RMSNorm's row kernels on n elements: bit for bit
// against their Go twins (whichever implementation runs), the float64
// sums against float64 references, and that nothing outside the outputs
// is written or read (the inputs are NaN-guarded).
func testNormKernels(t *testing.T, r *rand.Rand, n int) {
	guard := math.Float32frombits(guardBits)
	x, xw := guardedInput(r, n)
	dy, dyw := guardedInput(r, n)
	w, ww := guardedInput(r, n)
	s := 0.25 + r.Float32()
	mt := 2*r.Float32() - 1
	n4 := n &^ 3

	var acc, twin [4]float64
	acc[1], twin[1] = 0.5, 0.5 // the sums add to what acc holds
	sumSq4(&acc, x[:n4])
	sumSq4Go(&twin, x[:n4])
	var ref [4]float64
	ref[1] = 0.5
	for j, v := range x[:n4] {
		ref[j%4] += float64(v) * float64(v)
	}
	for l := range acc {
		if acc[l] != twin[l] || math.Abs(acc[l]-ref[l]) > 1e-12*math.Abs(ref[l]) {
			t.Fatalf("sumSq4 n=%d: lane %d = %v, twin %v, float64 sum %v", n, l, acc[l], twin[l], ref[l])
		}
	}

	acc, twin, ref = [4]float64{}, [4]float64{}, [4]float64{}
	dotWX4(&acc, dy[:n4], w, x, s)
	dotWX4Go(&twin, dy[:n4], w, x, s)
	for j := range n4 {
		ref[j%4] += float64(dy[j]) * float64(w[j]) * float64(x[j]) * float64(s)
	}
	for l := range acc {
		if acc[l] != twin[l] || math.Abs(acc[l]-ref[l]) > 1e-6*(1+math.Abs(ref[l])) {
			t.Fatalf("dotWX4 n=%d: lane %d = %v, twin %v, float64 sum %v", n, l, acc[l], twin[l], ref[l])
		}
	}

	for _, k := range []struct {
		name string
		run  func(out []float32)
		twin func(out []float32)
		want func(j int, out0 float32) float64
	}{
		{"scaleMul", func(o []float32) { scaleMul(o, x, w, s) }, func(o []float32) { scaleMulGo(o, x, w, s) },
			func(j int, _ float32) float64 { return float64(x[j]) * float64(s) * float64(w[j]) }},
		{"rmsBack", func(o []float32) { rmsBack(o, dy, w, x, s, mt) }, func(o []float32) { rmsBackGo(o, dy, w, x, s, mt) },
			func(j int, o float32) float64 {
				return float64(o) + float64(s)*(float64(dy[j])*float64(w[j])-float64(x[j])*float64(s)*float64(mt))
			}},
		{"addMulScale", func(o []float32) { addMulScale(o, dy, x, s) }, func(o []float32) { addMulScaleGo(o, dy, x, s) },
			func(j int, o float32) float64 { return float64(o) + float64(dy[j])*float64(x[j])*float64(s) }},
	} {
		out, ow := padded(n, guard)
		randFill(r, out)
		out0 := append([]float32(nil), out...)
		want := append([]float32(nil), out...)
		k.run(out)
		k.twin(want)
		checkGuards(t, ow, n, k.name+" out")
		for j := range out {
			if !sameBits32(out[j], want[j]) {
				t.Fatalf("%s n=%d: out[%d] = %v, Go twin %v", k.name, n, j, out[j], want[j])
			}
			// A few float32 roundings of terms of order 1 (randFill is ±1).
			if e := k.want(j, out0[j]); !(math.Abs(float64(out[j])-e) <= 1e-6*(1+math.Abs(e))) {
				t.Fatalf("%s n=%d: out[%d] = %v, float64 %v", k.name, n, j, out[j], e)
			}
		}
	}
	checkGuards(t, xw, n, "x")
	checkGuards(t, dyw, n, "dy")
	checkGuards(t, ww, n, "w")
}

func TestNormKernels(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(17, 4))
		for _, n := range vecSizes() {
			testNormKernels(t, r, n)
		}
	})
}

func FuzzNormKernels(f *testing.F) { fuzzVec(f, testNormKernels) }

// TestRMSNormRowsMatchGenericLoops: the float32 rows (rmsNormRow32,
// rmsNormBackRow32, vectorised where the CPU allows) give the bits of the
// generic loops the float64 backend runs, executed in float32.
func TestRMSNormRowsMatchGenericLoops(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 21))
		for _, C := range []int{1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 64, 100, 256, 257} {
			x, dy, w := make([]float32, C), make([]float32, C), make([]float32, C)
			randFill(r, x)
			randFill(r, dy)
			randFill(r, w)
			out, ref := make([]float32, C), make([]float32, C)
			s := rmsNormRow32(out, x, w, 1e-6)
			sr := rmsNormRowGeneric(ref, x, w, 1e-6)
			if math.Float32bits(s) != math.Float32bits(sr) {
				t.Fatalf("C=%d: rstd %v, generic %v", C, s, sr)
			}
			d, dref := make([]float32, C), make([]float32, C)
			randFill(r, d)
			copy(dref, d)
			rmsNormBackRow32(d, dy, w, x, s)
			rmsNormBackRowGeneric(dref, dy, w, x, s)
			for j := range C {
				if math.Float32bits(out[j]) != math.Float32bits(ref[j]) || math.Float32bits(d[j]) != math.Float32bits(dref[j]) {
					t.Fatalf("C=%d: element %d: out %v dx %v, generic %v %v", C, j, out[j], d[j], ref[j], dref[j])
				}
			}
		}
	})
}

// testNormRowsKernels checks the many-row kernels on rows of C elements
// (C a multiple of 8, from n): bit for bit against their Go twins and
// against the one-row kernels row by row, and that nothing outside the
// outputs is written.
func testNormRowsKernels(t *testing.T, r *rand.Rand, n int) {
	C, rows := 8*(1+n%40), 1+n%5
	guard := math.Float32frombits(guardBits)
	x, xw := guardedInput(r, rows*C)
	dy, dyw := guardedInput(r, rows*C)
	w, ww := guardedInput(r, C)
	s, mt := make([]float32, rows), make([]float32, rows)
	for i := range s {
		s[i] = 0.25 + r.Float32()
		mt[i] = 2*r.Float32() - 1
	}

	ss, sst := make([]float64, rows), make([]float64, rows)
	m, mtw := make([]float64, rows), make([]float64, rows)
	sumSqRows(ss, x, C)
	sumSqRowsGo(sst, x, C)
	dotWXRows(m, dy, w, x, s, C)
	dotWXRowsGo(mtw, dy, w, x, s, C)
	for i := range rows {
		var a, b [4]float64
		sumSq4(&a, x[i*C:i*C+C])
		dotWX4(&b, dy[i*C:i*C+C], w, x[i*C:i*C+C], s[i])
		if ss[i] != sst[i] || ss[i] != (a[0]+a[1])+(a[2]+a[3]) {
			t.Fatalf("sumSqRows C=%d row %d: %v, twin %v, one-row kernel %v", C, i, ss[i], sst[i], (a[0]+a[1])+(a[2]+a[3]))
		}
		if m[i] != mtw[i] || m[i] != (b[0]+b[1])+(b[2]+b[3]) {
			t.Fatalf("dotWXRows C=%d row %d: %v, twin %v, one-row kernel %v", C, i, m[i], mtw[i], (b[0]+b[1])+(b[2]+b[3]))
		}
	}

	for _, k := range []struct {
		name      string
		n         int
		run, twin func(out []float32)
		rowByRow  func(out []float32)
	}{
		{"scaleMulRows", rows * C, func(o []float32) { scaleMulRows(o, x, w, s, C) }, func(o []float32) { scaleMulRowsGo(o, x, w, s, C) },
			func(o []float32) {
				for i := range rows {
					scaleMul(o[i*C:i*C+C], x[i*C:i*C+C], w, s[i])
				}
			}},
		{"rmsBackRows", rows * C, func(o []float32) { rmsBackRows(o, dy, w, x, s, mt, C) }, func(o []float32) { rmsBackRowsGo(o, dy, w, x, s, mt, C) },
			func(o []float32) {
				for i := range rows {
					rmsBack(o[i*C:i*C+C], dy[i*C:i*C+C], w, x[i*C:i*C+C], s[i], mt[i])
				}
			}},
		{"addMulScaleRows", C, func(o []float32) { addMulScaleRows(o, dy, x, s, C) }, func(o []float32) { addMulScaleRowsGo(o, dy, x, s, C) },
			func(o []float32) {
				for i := range rows {
					addMulScale(o, dy[i*C:i*C+C], x[i*C:i*C+C], s[i])
				}
			}},
	} {
		out, ow := padded(k.n, guard)
		randFill(r, out)
		twin := append([]float32(nil), out...)
		each := append([]float32(nil), out...)
		k.run(out)
		k.twin(twin)
		k.rowByRow(each)
		checkGuards(t, ow, k.n, k.name+" out")
		for j := range out {
			if !sameBits32(out[j], twin[j]) || !sameBits32(out[j], each[j]) {
				t.Fatalf("%s C=%d rows=%d: out[%d] = %v, Go twin %v, row by row %v", k.name, C, rows, j, out[j], twin[j], each[j])
			}
		}
	}
	checkGuards(t, xw, rows*C, "x")
	checkGuards(t, dyw, rows*C, "dy")
	checkGuards(t, ww, C, "w")
}

func TestNormRowsKernels(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(19, 2))
		for n := range 200 {
			testNormRowsKernels(t, r, n)
		}
	})
}

func FuzzNormRowsKernels(f *testing.F) { fuzzVec(f, testNormRowsKernels) }

// TestRMSNormManyRowsMatchRowByRow: the float32 ops on rows of a multiple
// of 8 (the many-row kernels) give the bits of the one-row path, forward,
// input gradient and weight gradient, without and with a saved rstd.
func TestRMSNormManyRowsMatchRowByRow(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 1))
		for _, C := range []int{8, 32, 256} {
			const rows = 150 // more than one redBlock of the weight gradient
			x, dy, w := make([]float32, rows*C), make([]float32, rows*C), make([]float32, C)
			randFill(r, x)
			randFill(r, dy)
			randFill(r, w)
			out, rs := make([]float32, rows*C), make([]float32, rows)
			rmsNormRows32(out, rs, x, w, C, 1e-6)
			d, dref := make([]float32, rows*C), make([]float32, rows*C)
			randFill(r, d)
			copy(dref, d)
			rmsNormBackRows32(d, dy, w, x, rs, C)
			for i := range rows {
				o := make([]float32, C)
				sr := rmsNormRowGeneric(o, x[i*C:i*C+C], w, 1e-6)
				rmsNormBackRowGeneric(dref[i*C:i*C+C], dy[i*C:i*C+C], w, x[i*C:i*C+C], sr)
				if math.Float32bits(sr) != math.Float32bits(rs[i]) {
					t.Fatalf("C=%d row %d: rstd %v, one row %v", C, i, rs[i], sr)
				}
				for j := range C {
					if math.Float32bits(o[j]) != math.Float32bits(out[i*C+j]) || math.Float32bits(dref[i*C+j]) != math.Float32bits(d[i*C+j]) {
						t.Fatalf("C=%d row %d element %d: out %v dx %v, one row %v %v", C, i, j, out[i*C+j], d[i*C+j], o[j], dref[i*C+j])
					}
				}
			}
			// Through the backend: the weight gradient too, against a
			// row-by-row float32 sum in the same blocks.
			be := NewCPU()
			tx, tdy, tw := be.Alloc(rows*C), be.Alloc(rows*C), be.Alloc(C)
			be.Load(tx, x)
			be.Load(tdy, dy)
			be.Load(tw, w)
			to, trs, tdx, tdw := be.Alloc(rows*C), be.Alloc(rows), be.Alloc(rows*C), be.Alloc(C)
			be.RMSNorm(to, trs, tx, tw, rows, C, 1e-6)
			be.RMSNorm(be.Alloc(rows*C), Tensor{}, tx, tw, rows, C, 1e-6) // no rstd saved
			be.RMSNormBackward(tdx, tdw, tdy, tx, tw, trs, rows, C)
			gotW := make([]float32, C)
			be.Store(gotW, tdw)
			wantW := make([]float32, C)
			for b := 0; b < rows; b += redBlock {
				p := make([]float32, C)
				for i := b; i < min(b+redBlock, rows); i++ {
					addMulScaleGo(p, dy[i*C:i*C+C], x[i*C:i*C+C], rs[i])
				}
				for j := range C {
					wantW[j] += p[j]
				}
			}
			for j := range C {
				if math.Float32bits(gotW[j]) != math.Float32bits(wantW[j]) {
					t.Fatalf("C=%d: dw[%d] = %v, row by row %v", C, j, gotW[j], wantW[j])
				}
			}
		}
	})
}
