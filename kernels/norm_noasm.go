//go:build !amd64

package kernels

func sumSq4(acc *[4]float64, x []float32)                   { sumSq4Go(acc, x) }
func dotWX4(acc *[4]float64, dy, w, x []float32, s float32) { dotWX4Go(acc, dy, w, x, s) }
func scaleMul(out, x, w []float32, s float32)               { scaleMulGo(out, x, w, s) }
func rmsBack(d, dy, w, x []float32, s, mt float32)          { rmsBackGo(d, dy, w, x, s, mt) }
func addMulScale(p, dy, x []float32, s float32)             { addMulScaleGo(p, dy, x, s) }

func sumSqRows(ss []float64, x []float32, C int)          { sumSqRowsGo(ss, x, C) }
func dotWXRows(m []float64, dy, w, x, s []float32, C int) { dotWXRowsGo(m, dy, w, x, s, C) }
func scaleMulRows(out, x, w, s []float32, C int)          { scaleMulRowsGo(out, x, w, s, C) }
func rmsBackRows(d, dy, w, x, s, mt []float32, C int)     { rmsBackRowsGo(d, dy, w, x, s, mt, C) }
func addMulScaleRows(p, dy, x, s []float32, C int)        { addMulScaleRowsGo(p, dy, x, s, C) }
