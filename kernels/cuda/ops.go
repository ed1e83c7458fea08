//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"gorgonia.org/cu"

	"whale/kernels"
)

// Each op checks sizes on the host (a mismatch panics, as on the CPU),
// then queues its kernels. The comment above each launch is the kernel's
// C signature: the argument list below it must match it slot for slot.

// Fill implements kernels.Backend.
func (b *Backend) Fill(dst kernels.Tensor, v float32) {
	p := f32("Fill", "dst", dst, -1)
	if dst.Len() == 0 {
		return
	}
	defer b.enter("Fill")()
	b.check("Fill", cu.MemsetD32Async(cu.DevicePtr(p), uint(math.Float32bits(v)), int64(dst.Len()), b.stream))
}

// Copy implements kernels.Backend.
func (b *Backend) Copy(dst, src kernels.Tensor) {
	same("Copy", dst.Len(), src.Len())
	d, s := f32("Copy", "dst", dst, -1), f32("Copy", "src", src, -1)
	if dst.Len() == 0 {
		return
	}
	defer b.enter("Copy")()
	b.check("Copy", cu.MemcpyDtoDAsync(cu.DevicePtr(d), cu.DevicePtr(s), int64(4*dst.Len()), b.stream))
}

// ToBF16 implements kernels.Backend.
func (b *Backend) ToBF16(dst, src kernels.Tensor) {
	same("ToBF16", dst.Len(), src.Len())
	d, s, n := bf16("ToBF16", "dst", dst, -1), f32("ToBF16", "src", src, -1), dst.Len()
	defer b.enter("ToBF16")()
	// whale_to_bf16(unsigned short* dst, const float* src, i64 n)
	b.launch("ToBF16", "whale_to_bf16", elems(n), d, s, i64(n))
}

// Add implements kernels.Backend.
func (b *Backend) Add(out, a, c kernels.Tensor) {
	same("Add a", out.Len(), a.Len())
	same("Add b", out.Len(), c.Len())
	o, x, y, n := f32("Add", "out", out, -1), f32("Add", "a", a, -1), f32("Add", "b", c, -1), out.Len()
	defer b.enter("Add")()
	// whale_add(float* out, const float* a, const float* b, i64 n)
	b.launch("Add", "whale_add", elems(n), o, x, y, i64(n))
}

// Scale implements kernels.Backend.
func (b *Backend) Scale(x kernels.Tensor, s float32) {
	p, n := f32("Scale", "x", x, -1), x.Len()
	defer b.enter("Scale")()
	// whale_scale(float* x, i64 n, float s)
	b.launch("Scale", "whale_scale", elems(n), p, i64(n), f32a(s))
}

// SumSq implements kernels.Backend: one double partial per chunk of
// sumsqChunk elements, added on the host in chunk order.
func (b *Backend) SumSq(x kernels.Tensor) float64 {
	p, n := f32("SumSq", "x", x, -1), x.Len()
	if n == 0 {
		return 0
	}
	defer b.enter("SumSq")()
	nb := (n + sumsqChunk - 1) / sumsqChunk
	part := b.alloc("SumSq", 2*nb, 4) // nb doubles
	defer b.release(part)
	// whale_sumsq(double* part, const float* x, i64 n)
	b.launch("SumSq", "whale_sumsq", dim{nb, 1, 1, threads}, uint64(part.ptr), p, i64(n))
	h := make([]float64, nb)
	b.check("SumSq", cu.MemcpyDtoHAsync(unsafe.Pointer(&h[0]), part.ptr, int64(8*nb), b.stream))
	b.wait("SumSq")
	var s float64
	for _, v := range h {
		s += v
	}
	return s
}

// AllFinite implements kernels.Backend.
func (b *Backend) AllFinite(x kernels.Tensor) bool {
	p, n := f32("AllFinite", "x", x, -1), x.Len()
	if n == 0 {
		return true
	}
	defer b.enter("AllFinite")()
	flagBuf := b.alloc("AllFinite", 1, 4) // zeroed
	defer b.release(flagBuf)
	// whale_all_finite(int* bad, const float* x, i64 n)
	b.launch("AllFinite", "whale_all_finite", elems(n), uint64(flagBuf.ptr), p, i64(n))
	var bad int32
	b.check("AllFinite", cu.MemcpyDtoHAsync(unsafe.Pointer(&bad), flagBuf.ptr, 4, b.stream))
	b.wait("AllFinite")
	return bad == 0
}

// BiasAdd implements kernels.Backend.
func (b *Backend) BiasAdd(out, bias kernels.Tensor, rows, n int) {
	o, w := f32("BiasAdd", "out", out, rows*n), f32("BiasAdd", "bias", bias, n)
	if rows*n == 0 {
		return
	}
	defer b.enter("BiasAdd")()
	// whale_bias_add(float* out, const float* bias, i64 rows, i64 n)
	b.launch("BiasAdd", "whale_bias_add", elems(rows*n), o, w, i64(rows), i64(n))
}

// colSum adds into dst (n) the column sums of a (rows,n) matrix: partials
// of colChunk rows each (whale_colsum_partial or, for RMSNorm's weight,
// whale_rmsnorm_dw_partial), then added in chunk order: deterministic.
// partial queues the partial kernel into the given part buffer.
func (b *Backend) colSum(op string, dst uint64, rows, n int, partial func(part uint64, d dim)) {
	if rows == 0 || n == 0 {
		return
	}
	chunks := (rows + colChunk - 1) / colChunk
	if chunks > 65535 {
		panic(fmt.Sprintf("cuda: %s: %d rows is more than a column sum handles", op, rows))
	}
	part := b.alloc(op, chunks*n, 4)
	defer b.release(part)
	cols := (n + threads - 1) / threads
	partial(uint64(part.ptr), dim{cols, chunks, 1, threads})
	// whale_colsum_add(float* dst, const float* part, i64 chunks, i64 n)
	b.launch(op, "whale_colsum_add", dim{cols, 1, 1, threads}, dst, uint64(part.ptr), i64(chunks), i64(n))
}

// BiasBackward implements kernels.Backend.
func (b *Backend) BiasBackward(dbias, dout kernels.Tensor, rows, n int) {
	db, d := f32("BiasBackward", "dbias", dbias, n), f32("BiasBackward", "dout", dout, rows*n)
	defer b.enter("BiasBackward")()
	b.colSum("BiasBackward", db, rows, n, func(part uint64, g dim) {
		// whale_colsum_partial(float* part, const float* src, i64 rows, i64 n)
		b.launch("BiasBackward", "whale_colsum_partial", g, part, d, i64(rows), i64(n))
	})
}

func checkTokens(tokens []int32, V int) {
	for i, t := range tokens {
		if t < 0 || int(t) >= V {
			panic(fmt.Sprintf("kernels: token %d at row %d outside vocabulary of %d", t, i, V))
		}
	}
}

// Embedding implements kernels.Backend.
func (b *Backend) Embedding(out, table kernels.Tensor, tokens []int32, C int) {
	o, w := f32("Embedding", "out", out, len(tokens)*C), f32("Embedding", "table", table, -1)
	checkTokens(tokens, table.Len()/C)
	if len(tokens)*C == 0 {
		return
	}
	defer b.enter("Embedding")()
	tok := b.upload("Embedding", int32s(tokens))
	defer b.release(tok)
	// whale_embedding(float* out, const float* table, const int* tokens, i64 ntok, i64 C)
	b.launch("Embedding", "whale_embedding", elems(len(tokens)*C), o, w, uint64(tok.ptr), i64(len(tokens)), i64(C))
}

// EmbeddingBackward implements kernels.Backend. The rows are grouped by
// token on the host (each group in row order), so one thread owns each
// (token, column) and adds that token's rows in order.
func (b *Backend) EmbeddingBackward(dtable, dout kernels.Tensor, tokens []int32, C int) {
	dw, d := f32("EmbeddingBackward", "dtable", dtable, -1), f32("EmbeddingBackward", "dout", dout, len(tokens)*C)
	checkTokens(tokens, dtable.Len()/C)
	if len(tokens)*C == 0 {
		return
	}
	order := make([]int32, len(tokens))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(x, y int32) int { return int(tokens[x]) - int(tokens[y]) })
	var uniq, start []int32
	for s, r := range order {
		if s == 0 || tokens[r] != tokens[order[s-1]] {
			uniq = append(uniq, tokens[r])
			start = append(start, int32(s))
		}
	}
	start = append(start, int32(len(order)))
	plan := slices.Concat(uniq, start, order)
	defer b.enter("EmbeddingBackward")()
	pb := b.upload("EmbeddingBackward", int32s(plan))
	defer b.release(pb)
	// whale_embedding_backward(float* dtable, const float* dout, const int* plan, i64 nuniq, i64 C)
	b.launch("EmbeddingBackward", "whale_embedding_backward", dim{len(uniq), (C + threads - 1) / threads, 1, threads},
		dw, d, uint64(pb.ptr), i64(len(uniq)), i64(C))
}

// RMSNorm implements kernels.Backend.
func (b *Backend) RMSNorm(out, rstd, x, w kernels.Tensor, rows, C int, eps float64) {
	o, xs, ws := f32("RMSNorm", "out", out, rows*C), f32("RMSNorm", "x", x, rows*C), f32("RMSNorm", "w", w, C)
	rs := optF32("RMSNorm", "rstd", rstd, rows)
	if rows == 0 {
		return
	}
	defer b.enter("RMSNorm")()
	// whale_rmsnorm(float* out, float* rstd, const float* x, const float* w, i64 rows, i64 C, double eps)
	b.launch("RMSNorm", "whale_rmsnorm", dim{rows, 1, 1, threads}, o, rs, xs, ws, i64(rows), i64(C), f64a(eps))
}

// RMSNormBackward implements kernels.Backend.
func (b *Backend) RMSNormBackward(dx, dw, dout, x, w, rstd kernels.Tensor, rows, C int) {
	const op = "RMSNormBackward"
	dxs, dys, xs := f32(op, "dx", dx, rows*C), f32(op, "dout", dout, rows*C), f32(op, "x", x, rows*C)
	ws, rs, dws := f32(op, "w", w, C), f32(op, "rstd", rstd, rows), optF32(op, "dw", dw, C)
	if rows == 0 {
		return
	}
	defer b.enter(op)()
	// whale_rmsnorm_backward(float* dx, const float* dout, const float* x, const float* w, const float* rstd, i64 rows, i64 C)
	b.launch(op, "whale_rmsnorm_backward", dim{rows, 1, 1, threads}, dxs, dys, xs, ws, rs, i64(rows), i64(C))
	if dws == 0 {
		return
	}
	b.colSum(op, dws, rows, C, func(part uint64, g dim) {
		// whale_rmsnorm_dw_partial(float* part, const float* dout, const float* x, const float* rstd, i64 rows, i64 n)
		b.launch(op, "whale_rmsnorm_dw_partial", g, part, dys, xs, rs, i64(rows), i64(C))
	})
}

// rope queues whale_rope: the inverse frequencies are computed here in
// float64 exactly as the CPU backend does, and uploaded with the positions.
func (b *Backend) rope(op string, out, x kernels.Tensor, pos []int32, rows, heads, hd int, theta, sign float64, add bool) {
	if hd%2 != 0 {
		panic(fmt.Sprintf("kernels: RoPE head dim %d is odd", hd))
	}
	o, xs := f32(op, "out", out, rows*heads*hd), f32(op, "x", x, rows*heads*hd)
	if len(pos) < rows {
		panic(fmt.Sprintf("kernels: %s pos has %d elements, needs %d", op, len(pos), rows))
	}
	if rows*heads*hd == 0 {
		return
	}
	defer b.enter(op)()
	ib := b.ropeFreqs(op, theta, hd)
	pb := b.ropePositions(op, pos[:rows])
	// whale_rope(float* out, const float* x, const int* pos, const double* inv, i64 rows, i64 heads, i64 hd, double sign, i64 add)
	b.launch(op, "whale_rope", elems(rows*heads*hd/2), o, xs, uint64(pb.ptr), uint64(ib.ptr),
		i64(rows), i64(heads), i64(hd), f64a(sign), flag(add))
}

// ropeKey names one table of RoPE inverse frequencies.
type ropeKey struct {
	theta uint64 // its bits: a NaN finds its own table again
	hd    int
}

// ropeFreqs returns the device copy of the inverse frequencies for theta
// and hd, uploading them the first time: a model asks for the same table
// at every layer and step. The buffer lives until Close.
func (b *Backend) ropeFreqs(op string, theta float64, hd int) *buffer {
	key := ropeKey{math.Float64bits(theta), hd}
	if buf, ok := b.ropeInv[key]; ok {
		return buf
	}
	inv := make([]float64, hd/2)
	for i := range inv {
		inv[i] = math.Pow(theta, -float64(2*i)/float64(hd))
	}
	buf := b.upload(op, float64s(inv))
	b.ropeInv[key] = buf
	return buf
}

// ropePos keeps the positions RoPE uploaded last, and their device copy:
// a model rotates queries and keys at the same positions in every layer,
// forward and backward, so one upload serves a whole step.
type ropePos struct {
	pos []int32
	buf *buffer
}

// ropePositions returns a device copy of pos, uploading it unless it
// equals the last one. A replaced copy goes back to the pool; launches
// queued before still read it first (stream order).
func (b *Backend) ropePositions(op string, pos []int32) *buffer {
	c := &b.ropePos
	if c.buf != nil && slices.Equal(c.pos, pos) {
		return c.buf
	}
	if c.buf != nil {
		b.release(c.buf)
	}
	c.buf = b.upload(op, int32s(pos))
	c.pos = append(c.pos[:0], pos...)
	return c.buf
}

// RoPE implements kernels.Backend.
func (b *Backend) RoPE(out, x kernels.Tensor, pos []int32, rows, heads, hd int, theta float64) {
	b.rope("RoPE", out, x, pos, rows, heads, hd, theta, 1, false)
}

// RoPEBackward implements kernels.Backend.
func (b *Backend) RoPEBackward(dx, dout kernels.Tensor, pos []int32, rows, heads, hd int, theta float64) {
	b.rope("RoPEBackward", dx, dout, pos, rows, heads, hd, theta, -1, true)
}

// SwiGLU implements kernels.Backend.
func (b *Backend) SwiGLU(out, gate, up kernels.Tensor) {
	same("SwiGLU gate", out.Len(), gate.Len())
	same("SwiGLU up", out.Len(), up.Len())
	o, g, u, n := f32("SwiGLU", "out", out, -1), f32("SwiGLU", "gate", gate, -1), f32("SwiGLU", "up", up, -1), out.Len()
	defer b.enter("SwiGLU")()
	// whale_swiglu(float* out, const float* g, const float* u, i64 n)
	b.launch("SwiGLU", "whale_swiglu", elems(n), o, g, u, i64(n))
}

// SwiGLUBackward implements kernels.Backend.
func (b *Backend) SwiGLUBackward(dgate, dup, dout, gate, up kernels.Tensor) {
	const op = "SwiGLUBackward"
	n := dout.Len()
	same(op+" dgate", dgate.Len(), n)
	same(op+" dup", dup.Len(), n)
	same(op+" gate", gate.Len(), n)
	same(op+" up", up.Len(), n)
	dg, du, d := f32(op, "dgate", dgate, -1), f32(op, "dup", dup, -1), f32(op, "dout", dout, -1)
	g, u := f32(op, "gate", gate, -1), f32(op, "up", up, -1)
	defer b.enter(op)()
	// whale_swiglu_backward(float* dg, float* du, const float* d, const float* g, const float* u, i64 n)
	b.launch(op, "whale_swiglu_backward", elems(n), dg, du, d, g, u, i64(n))
}

// CrossEntropy implements kernels.Backend.
func (b *Backend) CrossEntropy(loss, dlogits, logits kernels.Tensor, targets []int32, weight []float32, rows, V int) {
	const op = "CrossEntropy"
	ls, lg, dl := f32(op, "loss", loss, rows), f32(op, "logits", logits, rows*V), optF32(op, "dlogits", dlogits, rows*V)
	if len(targets) < rows || len(weight) < rows {
		panic(fmt.Sprintf("kernels: %s: %d targets and %d weights for %d rows", op, len(targets), len(weight), rows))
	}
	tg := slices.Clone(targets[:rows])
	for r, w := range weight[:rows] {
		if w == 0 {
			tg[r] = 0 // not read; keep the upload in range anyway
		} else if tg[r] < 0 || int(tg[r]) >= V {
			panic(fmt.Sprintf("kernels: CrossEntropy target %d at row %d outside vocabulary of %d", tg[r], r, V))
		}
	}
	if rows == 0 {
		return
	}
	defer b.enter(op)()
	tb := b.upload(op, int32s(tg))
	defer b.release(tb)
	wb := b.upload(op, float32s(weight[:rows]))
	defer b.release(wb)
	// whale_cross_entropy(float* loss, float* dlogits, const float* logits, const int* targets, const float* weight, i64 rows, i64 V)
	b.launch(op, "whale_cross_entropy", dim{rows, 1, 1, ceThreads}, ls, dl, lg, uint64(tb.ptr), uint64(wb.ptr), i64(rows), i64(V))
}

// AdamWUpdate implements kernels.Backend with the CPU's float32 constants
// (computed here the same way) and formula.
func (b *Backend) AdamWUpdate(p, g, m, v kernels.Tensor, h kernels.AdamW) {
	const op = "AdamWUpdate"
	n := p.Len()
	same("AdamW grad", g.Len(), n)
	same("AdamW m", m.Len(), n)
	same("AdamW v", v.Len(), n)
	if h.Step < 1 {
		panic("kernels: AdamW step must be ≥ 1")
	}
	ps, gs, ms, vs := f32(op, "p", p, -1), f32(op, "g", g, -1), f32(op, "m", m, -1), f32(op, "v", v, -1)
	c1 := float32(1 / (1 - math.Pow(h.Beta1, float64(h.Step))))
	c2 := float32(1 / (1 - math.Pow(h.Beta2, float64(h.Step))))
	defer b.enter(op)()
	// whale_adamw(float* p, const float* g, float* m, float* v, i64 n, float b1, float b2, float c1, float c2,
	//             float lr, float eps, float decay, float gsc)
	b.launch(op, "whale_adamw", elems(n), ps, gs, ms, vs, i64(n), f32a(float32(h.Beta1)), f32a(float32(h.Beta2)),
		f32a(c1), f32a(c2), f32a(float32(h.LR)), f32a(float32(h.Eps)), f32a(float32(1-h.LR*h.WeightDecay)), f32a(float32(h.GradScale)))
}
