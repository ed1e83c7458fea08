package kernels

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// redBlock is the number of rows (or elements/64) one partial sum of a
// reduction covers. It is fixed, never derived from the thread count, so
// reductions add the same partials in the same order however many threads
// run them.
const redBlock = 64

// rowGrain returns a Parallel grain giving each chunk about 32k element
// operations for rows of n elements.
func rowGrain(n int) int { return 1 + (1<<15)/(1+n) }

// Add implements Backend.
func (c *CPU[T]) Add(out, a, b Tensor) {
	o, x, y := c.s(out), c.s(a), c.s(b)
	same("Add a", len(o), len(x))
	same("Add b", len(o), len(y))
	Parallel(len(o), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o[i] = x[i] + y[i]
		}
	})
}

// Scale implements Backend.
func (c *CPU[T]) Scale(x Tensor, s float32) {
	d := c.s(x)
	f := T(s)
	Parallel(len(d), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d[i] *= f
		}
	})
}

// SumSq implements Backend: partial sums over fixed blocks of 4096
// elements, added in block order.
func (c *CPU[T]) SumSq(x Tensor) float64 {
	d := c.s(x)
	const blk = 4096
	nb := (len(d) + blk - 1) / blk
	part := make([]float64, nb)
	Parallel(nb, 4, func(lo, hi int) {
		b := lo
		// Eight whole blocks at a time, their sums interleaved: each is
		// still one chain of adds in element order (the same bits), but
		// eight chains do not wait on each other's latency.
		for ; b+8 <= hi && (b+8)*blk <= len(d); b += 8 {
			x0, x1 := d[b*blk:][:blk], d[(b+1)*blk:][:blk]
			x2, x3 := d[(b+2)*blk:][:blk], d[(b+3)*blk:][:blk]
			x4, x5 := d[(b+4)*blk:][:blk], d[(b+5)*blk:][:blk]
			x6, x7 := d[(b+6)*blk:][:blk], d[(b+7)*blk:][:blk]
			var s0, s1, s2, s3, s4, s5, s6, s7 float64
			for j := range blk {
				s0 += float64(x0[j]) * float64(x0[j])
				s1 += float64(x1[j]) * float64(x1[j])
				s2 += float64(x2[j]) * float64(x2[j])
				s3 += float64(x3[j]) * float64(x3[j])
				s4 += float64(x4[j]) * float64(x4[j])
				s5 += float64(x5[j]) * float64(x5[j])
				s6 += float64(x6[j]) * float64(x6[j])
				s7 += float64(x7[j]) * float64(x7[j])
			}
			part[b], part[b+1], part[b+2], part[b+3] = s0, s1, s2, s3
			part[b+4], part[b+5], part[b+6], part[b+7] = s4, s5, s6, s7
		}
		for ; b < hi; b++ {
			var s float64
			for _, v := range d[b*blk : min(b*blk+blk, len(d))] {
				s += float64(v) * float64(v)
			}
			part[b] = s
		}
	})
	var s float64
	for _, p := range part {
		s += p
	}
	return s
}

// AllFinite implements Backend.
func (c *CPU[T]) AllFinite(x Tensor) bool {
	d := c.s(x)
	const blk = 1 << 14
	nb := (len(d) + blk - 1) / blk
	bad := make([]bool, nb)
	Parallel(nb, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			for _, v := range d[b*blk : min(b*blk+blk, len(d))] {
				// v-v is 0 for finite v and NaN for NaN and ±Inf.
				if v-v != 0 {
					bad[b] = true
					break
				}
			}
		}
	})
	for _, b := range bad {
		if b {
			return false
		}
	}
	return true
}

// BiasAdd implements Backend.
func (c *CPU[T]) BiasAdd(out, bias Tensor, rows, n int) {
	o, b := c.s(out), c.s(bias)
	need("BiasAdd out", len(o), rows*n)
	need("BiasAdd bias", len(b), n)
	Parallel(rows, rowGrain(n), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := o[r*n : r*n+n]
			for j := range row {
				row[j] += b[j]
			}
		}
	})
}

// colSumInto adds into dst (n) the sum over rows of each row's
// contribution, which f(r0, r1, p) adds into the partial sum p (n) for
// rows r0 to r1-1, in row order. Rows are summed in fixed blocks of
// redBlock whose partials are then added in order: deterministic.
func colSumInto[T Float](dst []T, rows, n int, f func(r0, r1 int, p []T)) {
	nb := (rows + redBlock - 1) / redBlock
	part := make([]T, nb*n)
	Parallel(nb, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			f(b*redBlock, min(b*redBlock+redBlock, rows), part[b*n:b*n+n])
		}
	})
	for b := 0; b < nb; b++ {
		for j, v := range part[b*n : b*n+n] {
			dst[j] += v
		}
	}
}

// BiasBackward implements Backend.
func (c *CPU[T]) BiasBackward(dbias, dout Tensor, rows, n int) {
	db, d := c.s(dbias), c.s(dout)
	need("BiasBackward dbias", len(db), n)
	need("BiasBackward dout", len(d), rows*n)
	colSumInto(db[:n], rows, n, func(r0, r1 int, p []T) {
		for r := r0; r < r1; r++ {
			for j, v := range d[r*n : r*n+n] {
				p[j] += v
			}
		}
	})
}

func checkTokens(tokens []int32, V int) {
	for i, t := range tokens {
		if t < 0 || int(t) >= V {
			panic(fmt.Sprintf("kernels: token %d at row %d outside vocabulary of %d", t, i, V))
		}
	}
}

// Embedding implements Backend.
func (c *CPU[T]) Embedding(out, table Tensor, tokens []int32, C int) {
	o, w := c.s(out), c.s(table)
	need("Embedding out", len(o), len(tokens)*C)
	checkTokens(tokens, len(w)/C)
	Parallel(len(tokens), rowGrain(C), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			t := int(tokens[i])
			copy(o[i*C:i*C+C], w[t*C:t*C+C])
		}
	})
}

// EmbeddingBackward implements Backend: split over columns, each worker
// adds every token's row in token order, so the sums are deterministic.
func (c *CPU[T]) EmbeddingBackward(dtable, dout Tensor, tokens []int32, C int) {
	dw, d := c.s(dtable), c.s(dout)
	need("EmbeddingBackward dout", len(d), len(tokens)*C)
	checkTokens(tokens, len(dw)/C)
	Parallel(C, 16, func(lo, hi int) {
		for i, t := range tokens {
			dst := dw[int(t)*C+lo : int(t)*C+hi]
			for j, v := range d[i*C+lo : i*C+hi] {
				dst[j] += v
			}
		}
	})
}

// RMSNorm implements Backend.
func (c *CPU[T]) RMSNorm(out, rstd, x, w Tensor, rows, C int, eps float64) {
	o, rs, xs, ws := c.s(out), c.opt(rstd), c.s(x), c.s(w)
	need("RMSNorm out", len(o), rows*C)
	need("RMSNorm x", len(xs), rows*C)
	need("RMSNorm w", len(ws), C)
	if rs != nil {
		need("RMSNorm rstd", len(rs), rows)
	}
	if o32, ok := any(o).([]float32); ok && C%8 == 0 {
		// Many rows a call (rmsNormRows32): the same bits as row by row.
		x32, w32, r32 := any(xs).([]float32), any(ws).([]float32), any(rs).([]float32)
		Parallel(rows, rowGrain(C), func(lo, hi int) {
			var stack [rowsOnStack]float32
			var s []float32
			switch {
			case r32 != nil:
				s = r32[lo:hi]
			case hi-lo <= rowsOnStack:
				s = stack[:hi-lo]
			default:
				s = make([]float32, hi-lo)
			}
			rmsNormRows32(o32[lo*C:hi*C], s, x32[lo*C:hi*C], w32, C, eps)
		})
		return
	}
	Parallel(rows, rowGrain(C), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			s := rmsNormRow(o[r*C:r*C+C], xs[r*C:r*C+C], ws, eps)
			if rs != nil {
				rs[r] = s
			}
		}
	})
}

// rmsNormRow normalises one row, out = x·s·w, and returns s =
// 1/√(mean(x²)+eps); float32 rows run rmsNormRow32 (norm.go), the same
// operations vectorised.
func rmsNormRow[T Float](out, x, w []T, eps float64) T {
	if o, ok := any(out).([]float32); ok {
		return T(rmsNormRow32(o, any(x).([]float32), any(w).([]float32), eps))
	}
	return rmsNormRowGeneric(out, x, w, eps)
}

// rmsNormRowGeneric is rmsNormRow in plain loops.
func rmsNormRowGeneric[T Float](out, x, w []T, eps float64) T {
	C := len(x)
	// Four interleaved float64 sums (j%4), added pairwise: one chain of
	// dependent adds would wait out their latency per element.
	var s0, s1, s2, s3 float64
	n4 := C &^ 3
	for j := 0; j < n4; j += 4 {
		v := x[j : j+4 : j+4]
		s0 += float64(v[0]) * float64(v[0])
		s1 += float64(v[1]) * float64(v[1])
		s2 += float64(v[2]) * float64(v[2])
		s3 += float64(v[3]) * float64(v[3])
	}
	for _, v := range x[n4:] {
		s0 += float64(v) * float64(v)
	}
	ss := (s0 + s1) + (s2 + s3)
	s := T(1 / math.Sqrt(ss/float64(C)+eps))
	for j, v := range x {
		out[j] = v * s * w[j]
	}
	return s
}

// RMSNormBackward implements Backend.
func (c *CPU[T]) RMSNormBackward(dx, dw, dout, x, w, rstd Tensor, rows, C int) {
	dxs, dws, dys, xs, ws, rs := c.s(dx), c.opt(dw), c.s(dout), c.s(x), c.s(w), c.s(rstd)
	need("RMSNormBackward dx", len(dxs), rows*C)
	need("RMSNormBackward dout", len(dys), rows*C)
	need("RMSNormBackward x", len(xs), rows*C)
	if !dw.IsZero() {
		need("RMSNormBackward dw", len(dws), C)
	}
	need("RMSNormBackward w", len(ws), C)
	need("RMSNormBackward rstd", len(rs), rows)
	// Float32 rows of a multiple of 8 run many a call (norm.go's Rows
	// kernels), the same bits as row by row.
	many := C%8 == 0
	d32, f32 := any(dxs).([]float32)
	many = many && f32
	Parallel(rows, rowGrain(C), func(lo, hi int) {
		if many {
			dy32, w32, x32, r32 := any(dys).([]float32), any(ws).([]float32), any(xs).([]float32), any(rs).([]float32)
			rmsNormBackRows32(d32[lo*C:hi*C], dy32[lo*C:hi*C], w32, x32[lo*C:hi*C], r32[lo:hi], C)
			return
		}
		for r := lo; r < hi; r++ {
			rmsNormBackRow(dxs[r*C:r*C+C], dys[r*C:r*C+C], ws, xs[r*C:r*C+C], rs[r])
		}
	})
	if dw.IsZero() {
		return
	}
	colSumInto(dws[:C], rows, C, func(r0, r1 int, p []T) {
		if f, ok := any(p).([]float32); ok && many {
			dy32, x32, r32 := any(dys).([]float32), any(xs).([]float32), any(rs).([]float32)
			addMulScaleRows(f, dy32[r0*C:r1*C], x32[r0*C:r1*C], r32[r0:r1], C)
			return
		}
		for r := r0; r < r1; r++ {
			xr, dy, s := xs[r*C:r*C+C], dys[r*C:r*C+C], rs[r]
			if f, ok := any(p).([]float32); ok {
				addMulScale(f, any(dy).([]float32), any(xr).([]float32), float32(s))
				continue
			}
			for j, v := range xr {
				p[j] += T(dy[j] * v * s)
			}
		}
	})
}

// rmsNormBackRow adds one row's input gradient to d: with xhat = x·s,
// d += s·(dy·w − xhat·mean(dy·w·xhat)); float32 rows run
// rmsNormBackRow32 (norm.go), the same operations vectorised.
func rmsNormBackRow[T Float](d, dy, w, x []T, s T) {
	if f, ok := any(d).([]float32); ok {
		rmsNormBackRow32(f, any(dy).([]float32), any(w).([]float32), any(x).([]float32), float32(s))
		return
	}
	rmsNormBackRowGeneric(d, dy, w, x, s)
}

// rmsNormBackRowGeneric is rmsNormBackRow in plain loops.
func rmsNormBackRowGeneric[T Float](d, dy, w, x []T, s T) {
	C := len(x)
	// mean of dy·w·xhat, in four sums as in RMSNorm
	var m0, m1, m2, m3 float64
	n4 := C &^ 3
	for j := 0; j < n4; j += 4 {
		v, g, u := x[j:j+4:j+4], dy[j:j+4:j+4], w[j:j+4:j+4]
		m0 += float64(g[0] * u[0] * v[0] * s)
		m1 += float64(g[1] * u[1] * v[1] * s)
		m2 += float64(g[2] * u[2] * v[2] * s)
		m3 += float64(g[3] * u[3] * v[3] * s)
	}
	for j := n4; j < C; j++ {
		m0 += float64(dy[j] * w[j] * x[j] * s)
	}
	mt := T(((m0 + m1) + (m2 + m3)) / float64(C))
	for j, v := range x {
		d[j] += s * (dy[j]*w[j] - v*s*mt)
	}
}

// ropeShape is what RoPE computes once per (head dim, theta) and keeps:
// the inverse frequencies theta^(-2i/hd), i < hd/2, in float64 so both
// element types rotate by the same angles, and a table of the angles'
// cosines and sines by position, grown as positions appear. Every call
// used to compute them again: hd/2 calls of math.Pow and of math.Sincos
// per row, more than the rotation of a decoding step's row costs.
type ropeShape struct {
	inv []float64
	mu  sync.Mutex // serialises growing tab
	tab atomic.Pointer[ropeTab]
}

// ropeTab holds cos and sin of p·inv[i] (math.Sincos, the same call on the
// same arguments as computing them per row) for positions p < n, row p at
// p·half.
type ropeTab struct {
	n        int
	cos, sin []float64
}

// ropeTableMax bounds the table: rows at positions past it compute their
// angles themselves.
const ropeTableMax = 1 << 16

// ropeShapes holds the ropeShape of each ropeKey.
var ropeShapes sync.Map

type ropeKey struct {
	hd    int
	theta float64
}

func ropeShapeOf(hd int, theta float64) *ropeShape {
	if hd%2 != 0 {
		panic(fmt.Sprintf("kernels: RoPE head dim %d is odd", hd))
	}
	key := ropeKey{hd, theta}
	if r, ok := ropeShapes.Load(key); ok {
		return r.(*ropeShape)
	}
	inv := make([]float64, hd/2)
	for i := range inv {
		inv[i] = math.Pow(theta, -float64(2*i)/float64(hd))
	}
	r, _ := ropeShapes.LoadOrStore(key, &ropeShape{inv: inv})
	return r.(*ropeShape)
}

// table returns a table covering positions below n, or nil when n is past
// ropeTableMax. It grows to the next power of two (at least 256) and is
// never changed once published: readers need no lock.
func (r *ropeShape) table(n int) *ropeTab {
	if t := r.tab.Load(); t != nil && t.n >= n {
		return t
	}
	if n > ropeTableMax {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.tab.Load()
	if old != nil && old.n >= n {
		return old
	}
	size := 256
	for size < n {
		size *= 2
	}
	half := len(r.inv)
	t := &ropeTab{n: size, cos: make([]float64, size*half), sin: make([]float64, size*half)}
	from := 0
	if old != nil {
		from = old.n
		copy(t.cos, old.cos)
		copy(t.sin, old.sin)
	}
	for p := from; p < size; p++ {
		for i, f := range r.inv {
			t.sin[p*half+i], t.cos[p*half+i] = math.Sincos(float64(p) * f)
		}
	}
	r.tab.Store(t)
	return t
}

// rope rotates rows of heads by angle ±pos·inv; sign -1 is the inverse
// rotation (the backward pass). With add set it adds into out.
func ropeApply[T Float](out, x []T, pos []int32, rows, heads, hd int, theta float64, sign float64, add bool) {
	need("RoPE out", len(out), rows*heads*hd)
	need("RoPE x", len(x), rows*heads*hd)
	need("RoPE pos", len(pos), rows)
	if rows <= 0 {
		return
	}
	sh := ropeShapeOf(hd, theta)
	half := hd / 2
	W := heads * hd
	var tab *ropeTab
	if slices.Min(pos[:rows]) >= 0 {
		tab = sh.table(int(slices.Max(pos[:rows])) + 1)
	}
	Parallel(rows, rowGrain(W), func(lo, hi int) {
		cs := make([]T, half)
		sn := make([]T, half)
		for r := lo; r < hi; r++ {
			p := int(pos[r])
			if tab != nil {
				c, s := tab.cos[p*half:p*half+half], tab.sin[p*half:p*half+half]
				for i := range cs {
					cs[i], sn[i] = T(c[i]), T(sign*s[i])
				}
			} else {
				for i, f := range sh.inv {
					s, c := math.Sincos(float64(p) * f)
					cs[i], sn[i] = T(c), T(sign*s)
				}
			}
			if f, ok := any(cs).([]float32); ok {
				ropeRow(any(out[r*W:r*W+W]).([]float32), any(x[r*W:r*W+W]).([]float32), f, any(sn).([]float32), half, heads, add)
				continue
			}
			ropeRowGo(out[r*W:r*W+W], x[r*W:r*W+W], cs, sn, half, heads, add)
		}
	})
}

// ropeRowGo rotates the heads of one row (head h at h·2·half): ra = a·c −
// b·s, rb = b·c + a·s for the halves a, b, stored or (add) added to out.
// The conversions round every step, so that no compiler fuses a
// multiply-add and the assembly twin (ropeRowAVX2) matches bit for bit.
func ropeRowGo[T Float](out, x, cs, sn []T, half, heads int, add bool) {
	hd := 2 * half
	for h := 0; h < heads; h++ {
		xo := x[h*hd : h*hd+hd]
		oo := out[h*hd : h*hd+hd]
		for i := 0; i < half; i++ {
			a, b := xo[i], xo[i+half]
			ra := T(T(a*cs[i]) - T(b*sn[i]))
			rb := T(T(b*cs[i]) + T(a*sn[i]))
			if add {
				oo[i] = T(oo[i] + ra)
				oo[i+half] = T(oo[i+half] + rb)
			} else {
				oo[i], oo[i+half] = ra, rb
			}
		}
	}
}

// RoPE implements Backend.
func (c *CPU[T]) RoPE(out, x Tensor, pos []int32, rows, heads, hd int, theta float64) {
	ropeApply(c.s(out), c.s(x), pos, rows, heads, hd, theta, 1, false)
}

// RoPEBackward implements Backend.
func (c *CPU[T]) RoPEBackward(dx, dout Tensor, pos []int32, rows, heads, hd int, theta float64) {
	ropeApply(c.s(dx), c.s(dout), pos, rows, heads, hd, theta, -1, true)
}

// SwiGLU implements Backend.
func (c *CPU[T]) SwiGLU(out, gate, up Tensor) {
	o, g, u := c.s(out), c.s(gate), c.s(up)
	same("SwiGLU gate", len(o), len(g))
	same("SwiGLU up", len(o), len(u))
	Parallel(len(o), 1<<13, func(lo, hi int) { c.siluMul(o[lo:hi], g[lo:hi], u[lo:hi]) })
}

// SwiGLUBackward implements Backend.
func (c *CPU[T]) SwiGLUBackward(dgate, dup, dout, gate, up Tensor) {
	dg, du, d, g, u := c.s(dgate), c.s(dup), c.s(dout), c.s(gate), c.s(up)
	n := len(d)
	same("SwiGLUBackward dgate", len(dg), n)
	same("SwiGLUBackward dup", len(du), n)
	same("SwiGLUBackward gate", len(g), n)
	same("SwiGLUBackward up", len(u), n)
	Parallel(n, 1<<13, func(lo, hi int) {
		var sb [256]T
		for b := lo; b < hi; b += len(sb) {
			e := min(hi, b+len(sb))
			sg := sb[:e-b]
			c.sigmoid(sg, g[b:e])
			if f, ok := any(sg).([]float32); ok {
				swigluBack(any(dg[b:e]).([]float32), any(du[b:e]).([]float32), any(d[b:e]).([]float32),
					any(g[b:e]).([]float32), any(u[b:e]).([]float32), f)
				continue
			}
			swigluBackGo(dg[b:e], du[b:e], d[b:e], g[b:e], u[b:e], sg)
		}
	})
}

// swigluBackGo adds the SwiGLU gradients of one block: with s =
// sigmoid(g), dg += ((d·u)·s)·(1 + g·(1−s)) and du += d·(g·s). The
// conversions round every step, so that no compiler fuses a multiply-add
// and the assembly twin (swigluBackAVX2) matches bit for bit.
func swigluBackGo[T Float](dg, du, d, g, u, s []T) {
	for i, si := range s {
		c := T(1 + T(g[i]*T(1-si)))
		p := T(T(d[i]*u[i]) * si)
		dg[i] = T(dg[i] + T(p*c))
		du[i] = T(du[i] + T(d[i]*T(g[i]*si)))
	}
}

// CrossEntropy implements Backend. Each row's softmax is the backend's
// (c.softmax: for float32 the vector kernels of exp.go, summed in float32,
// relative error ≤ ~1e-6), computed once into the row's dlogits (or a
// scratch row) and then scaled by the row's weight.
func (c *CPU[T]) CrossEntropy(loss, dlogits, logits Tensor, targets []int32, weight []float32, rows, V int) {
	ls, dl, lg := c.s(loss), c.opt(dlogits), c.s(logits)
	need("CrossEntropy loss", len(ls), rows)
	need("CrossEntropy logits", len(lg), rows*V)
	need("CrossEntropy targets", len(targets), rows)
	need("CrossEntropy weight", len(weight), rows)
	if dl != nil {
		need("CrossEntropy dlogits", len(dl), rows*V)
	}
	for r, w := range weight[:rows] {
		if w != 0 && (targets[r] < 0 || int(targets[r]) >= V) {
			panic(fmt.Sprintf("kernels: CrossEntropy target %d at row %d outside vocabulary of %d", targets[r], r, V))
		}
	}
	Parallel(rows, rowGrain(V), func(lo, hi int) {
		var tmp []T
		for r := lo; r < hi; r++ {
			w := weight[r]
			if w == 0 {
				ls[r] = 0
				if dl != nil {
					clear(dl[r*V : r*V+V])
				}
				continue
			}
			z := lg[r*V : r*V+V]
			t := int(targets[r])
			zt := z[t] // before an in-place softmax overwrites it
			p := tmp
			if dl != nil {
				p = dl[r*V : r*V+V]
			} else if p == nil {
				tmp = make([]T, V)
				p = tmp
			}
			copy(p, z)
			lse := c.softmax(p, 1)
			ls[r] = T(float64(w) * (lse - float64(zt)))
			if dl == nil {
				continue
			}
			wt := T(w)
			for j := range p {
				p[j] *= wt
			}
			p[t] -= wt
		}
	})
}

// AdamWUpdate implements Backend.
func (c *CPU[T]) AdamWUpdate(p, g, m, v Tensor, h AdamW) {
	ps, gs, ms, vs := c.s(p), c.s(g), c.s(m), c.s(v)
	n := len(ps)
	same("AdamW grad", len(gs), n)
	same("AdamW m", len(ms), n)
	same("AdamW v", len(vs), n)
	if h.Step < 1 {
		panic("kernels: AdamW step must be ≥ 1")
	}
	b1, b2 := T(h.Beta1), T(h.Beta2)
	c1 := T(1 / (1 - math.Pow(h.Beta1, float64(h.Step))))
	c2 := T(1 / (1 - math.Pow(h.Beta2, float64(h.Step))))
	lr, eps, decay, gsc := T(h.LR), T(h.Eps), T(1-h.LR*h.WeightDecay), T(h.GradScale)
	if p32, ok := any(ps).([]float32); ok {
		g32, m32, v32 := any(gs).([]float32), any(ms).([]float32), any(vs).([]float32)
		k := &adamwK{gsc: float32(gsc), b1: float32(b1), ob1: float32(1 - b1), b2: float32(b2), ob2: float32(1 - b2),
			c1: float32(c1), c2: float32(c2), lr: float32(lr), eps: float32(eps), decay: float32(decay)}
		Parallel(n, 1<<12, func(lo, hi int) { adamw(p32[lo:hi], g32[lo:hi], m32[lo:hi], v32[lo:hi], k) })
		return
	}
	Parallel(n, 1<<12, func(lo, hi int) {
		adamwGeneric(ps[lo:hi], gs[lo:hi], ms[lo:hi], vs[lo:hi], b1, b2, c1, c2, lr, eps, decay, gsc)
	})
}

// adamwGeneric is AdamW's update in plain loops; float32 runs adamw
// (adamw.go), the same operations vectorised.
func adamwGeneric[T Float](ps, gs, ms, vs []T, b1, b2, c1, c2, lr, eps, decay, gsc T) {
	for i := range ps {
		gi := gs[i] * gsc
		mi := b1*ms[i] + (1-b1)*gi
		vi := b2*vs[i] + (1-b2)*gi*gi
		ms[i], vs[i] = mi, vi
		ps[i] = ps[i]*decay - lr*(mi*c1)/(T(math.Sqrt(float64(vi*c2)))+eps)
	}
}
