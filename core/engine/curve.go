package engine

// curvePoint reports whether boundary n (1 at the end of the first
// phase) measures test for the learning curves: never without CurveTest,
// every boundary without CurveSparse, else the boundaries numbered by a
// power of two and the run's last one (last).
//
// Why that set: a report uses the boundary test scores for its curves
// (score against model calls spent) and for the per-round gains, and the
// best-val checkpoint's test score at TestK for everything else, which
// finish measures whatever this says. A curve moves most in its first
// phases (the first weight phase takes most of a run's gain, and the
// first harness phase most of a search's), so points at 1, 2, 4, 8, …
// keep its shape where it bends for O(log n) measurements, and the last
// boundary gives where the run ended. The number of phases is not known
// in advance (the ledgers end a run, not a phase count), which rules
// out a fixed number of evenly spaced points. A run of 5 phases then
// measures 4 of them, one of 10 five, one of 24 six.
func (c Config) curvePoint(n int, last bool) bool {
	switch {
	case !c.CurveTest:
		return false
	case !c.CurveSparse || last:
		return true
	}
	return n > 0 && n&(n-1) == 0
}
