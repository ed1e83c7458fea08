package bench

// peakIters is the trip count of one timed chunk: about a millisecond.
const peakIters = 1 << 18

// fmaLoopGo runs n trips of eight independent scalar multiply-adds and
// returns their sum so the compiler cannot drop the work.
func fmaLoopGo(n int) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	x, y := float32(0.999), float32(1e-7)
	for range n {
		s0 = s0*x + y
		s1 = s1*x + y
		s2 = s2*x + y
		s3 = s3*x + y
		s4 = s4*x + y
		s5 = s5*x + y
		s6 = s6*x + y
		s7 = s7*x + y
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
}

var peakSink float32

func peakChunkGo() float64 {
	peakSink += fmaLoopGo(peakIters)
	return 8 * 2 * peakIters
}

// sumBlockGo is the pure-Go twin of sumBlockAVX2: eight independent sums
// keep it streaming rather than waiting on one chain of adds.
func sumBlockGo(x []float32) float32 {
	var s [8]float32
	n8 := len(x) &^ 7
	for i := 0; i < n8; i += 8 {
		v := x[i : i+8 : i+8]
		s[0] += v[0]
		s[1] += v[1]
		s[2] += v[2]
		s[3] += v[3]
		s[4] += v[4]
		s[5] += v[5]
		s[6] += v[6]
		s[7] += v[7]
	}
	for _, v := range x[n8:] {
		s[0] += v
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
