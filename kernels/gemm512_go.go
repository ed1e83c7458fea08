package kernels

import "math"

// kernRxNGo is the pure-Go twin of kern12x32AVX512 (rows = 12, panels =
// 2), kern12x16AVX512 (12, 1) and kern4x32AVX512 (4, 2). It fuses each
// multiply-add as the assembly does (fma32), so they agree bit for bit:
//
//	acc[i][j] = fma(a[i*rsa+p*csa], b[(j/16)*boff+p*ldb+j%16], acc[i][j])   p = 0…kc-1
//	c[i*ldc+j] = acc[i][j], or c[i*ldc+j] += acc[i][j] when add
func kernRxNGo(rows, kc int, a []float32, rsa, csa int, b []float32, boff, ldb, panels int, c []float32, ldc int, add bool) {
	for i := 0; i < rows; i++ {
		for q := 0; q < panels; q++ {
			bq := b[q*boff:]
			for j := 0; j < gemmNR; j++ {
				var s float32
				for p := 0; p < kc; p++ {
					s = fma32(a[i*rsa+p*csa], bq[p*ldb+j], s)
				}
				o := &c[i*ldc+q*gemmNR+j]
				if add {
					*o += s
				} else {
					*o = s
				}
			}
		}
	}
}

// fma32 returns a·b+c rounded once to float32, as VFMADD does for finite
// values. The product is exact in float64 (24+24 bits), but the float64
// sum may round onto the midpoint of two float32s, and rounding that again
// can go the wrong way; the sum's own rounding error then says which side
// the exact value lies on.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	r := float32(s)
	if float64(r) == s || math.IsInf(s, 0) || math.IsNaN(s) {
		return r
	}
	toward := float32(math.Inf(1))
	if s < float64(r) {
		toward = float32(math.Inf(-1))
	}
	o := math.Nextafter32(r, toward)
	if (float64(r)+float64(o))/2 != s {
		return r
	}
	z := s - p
	e := (p - (s - z)) + (float64(c) - z) // exact: s + e = p + c (two-sum)
	if e == 0 {
		return r // a true tie, already rounded to even
	}
	if (e > 0) == (o > r) {
		return o
	}
	return r
}
