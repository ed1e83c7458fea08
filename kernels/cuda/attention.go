//go:build cuda

package cuda

import (
	"fmt"
	"math"

	"gorgonia.org/cu"

	"whale/kernels"
)

// This backend keeps a KV cache position-major, [KVH][cap][hd]: a
// position's hd values are contiguous, so a GPU thread block reads a key
// or value row in one coalesced sweep.

func checkHeads(H, KVH, hd int) {
	if H <= 0 || KVH <= 0 || hd <= 0 || H%KVH != 0 {
		panic(fmt.Sprintf("kernels: attention with %d heads, %d KV heads, head dim %d", H, KVH, hd))
	}
}

// attnWidth is the kernel width (MAXHD of src/attention.cu) for head dim
// hd: the smallest of 32, 64, 128, 256 that holds it.
func attnWidth(hd int) int {
	for _, w := range []int{32, 64, 128, 256} {
		if hd <= w {
			return w
		}
	}
	panic(fmt.Sprintf("cuda: attention head dim %d is more than 256", hd))
}

// Attention implements kernels.Backend: flash-style, a warp per query row
// (lanes over the head dimension), AW_ROWS rows per block, grid
// (ceil(T/AW_ROWS), H, B) (src/attn_bwd_warp.cu). With
// WHALE_CUDA_ATTN_FWD=thread set when New ran, the kernel of the second
// device check runs instead: a thread per row, ATT_BR rows per block.
func (b *Backend) Attention(out, lse, q, k, v kernels.Tensor, B, T, H, KVH, hd int) {
	const op = "Attention"
	checkHeads(H, KVH, hd)
	N := B * T
	o, ls := f32(op, "out", out, N*H*hd), f32(op, "lse", lse, B*H*T)
	qs, ks, vs := f32(op, "q", q, N*H*hd), f32(op, "k", k, N*KVH*hd), f32(op, "v", v, N*KVH*hd)
	if N == 0 {
		return
	}
	checkGrid(op, B, H)
	w := attnWidth(hd)
	scale := float32(1 / math.Sqrt(float64(hd)))
	defer b.enter(op)()
	if b.attnFwdThread {
		// whale_attn_fwd_W(float* out, float* lse, const float* q, const float* k, const float* v,
		//                  i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale)
		b.launch(op, fmt.Sprintf("whale_attn_fwd_%d", w), dim{(T + attBR - 1) / attBR, H, B, attBR},
			o, ls, qs, ks, vs, i64(B), i64(T), i64(H), i64(KVH), i64(hd), f32a(scale))
		return
	}
	// whale_attn_fwd_warp_W: the arguments of whale_attn_fwd_W
	b.launch(op, fmt.Sprintf("whale_attn_fwd_warp_%d", w), dim{(T + awRows - 1) / awRows, H, B, awWarps * 32},
		o, ls, qs, ks, vs, i64(B), i64(T), i64(H), i64(KVH), i64(hd), f32a(scale))
}

// AttentionBackward implements kernels.Backend: D = rowsum(dout·out)
// first, then dq (a warp per query row, src/attn_bwd_warp.cu) and dk, dv
// (a warp per key row, looping over the query rows and heads that see
// it): every output element has one writer, and no atomics. With
// WHALE_CUDA_ATTN_BWD=thread set when New ran, the kernels of the second
// device check run instead (a thread per row, src/attention.cu).
func (b *Backend) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v kernels.Tensor, B, T, H, KVH, hd int) {
	const op = "AttentionBackward"
	checkHeads(H, KVH, hd)
	N := B * T
	dqs, dks, dvs := f32(op, "dq", dq, N*H*hd), f32(op, "dk", dk, N*KVH*hd), f32(op, "dv", dv, N*KVH*hd)
	dos, os, ls := f32(op, "dout", dout, N*H*hd), f32(op, "out", out, N*H*hd), f32(op, "lse", lse, B*H*T)
	qs, ks, vs := f32(op, "q", q, N*H*hd), f32(op, "k", k, N*KVH*hd), f32(op, "v", v, N*KVH*hd)
	if N == 0 {
		return
	}
	checkGrid(op, B, H)
	w := attnWidth(hd)
	scale := float32(1 / math.Sqrt(float64(hd)))
	defer b.enter(op)()
	D := b.alloc(op, B*H*T, 4)
	defer b.release(D)
	if b.attnBwdThread {
		// whale_attn_bwd_d(float* D, const float* dout, const float* out, i64 B, i64 T, i64 H, i64 hd)
		b.launch(op, "whale_attn_bwd_d", elems(B*H*T), uint64(D.ptr), dos, os, i64(B), i64(T), i64(H), i64(hd))
		tiles := (T + attBR - 1) / attBR
		// whale_attn_bwd_dq_W(float* dq, const float* dout, const float* D, const float* lse, const float* q,
		//                     const float* k, const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale)
		b.launch(op, fmt.Sprintf("whale_attn_bwd_dq_%d", w), dim{tiles, H, B, attBR},
			dqs, dos, uint64(D.ptr), ls, qs, ks, vs, i64(B), i64(T), i64(H), i64(KVH), i64(hd), f32a(scale))
		// whale_attn_bwd_dkdv_W(float* dk, float* dv, const float* dout, const float* D, const float* lse,
		//                       const float* q, const float* k, const float* v, i64 B, i64 T, i64 H, i64 KVH, i64 hd, float scale)
		b.launch(op, fmt.Sprintf("whale_attn_bwd_dkdv_%d", w), dim{tiles, KVH, B, attBR},
			dks, dvs, dos, uint64(D.ptr), ls, qs, ks, vs, i64(B), i64(T), i64(H), i64(KVH), i64(hd), f32a(scale))
		return
	}
	rows := B * H * T
	// whale_attn_bwd_d_warp(float* D, const float* dout, const float* out, i64 B, i64 T, i64 H, i64 hd)
	b.launch(op, "whale_attn_bwd_d_warp", dim{(rows + awWarps - 1) / awWarps, 1, 1, awWarps * 32},
		uint64(D.ptr), dos, os, i64(B), i64(T), i64(H), i64(hd))
	tiles := (T + awRows - 1) / awRows
	// whale_attn_bwd_dq_warp_W: the arguments of whale_attn_bwd_dq_W
	b.launch(op, fmt.Sprintf("whale_attn_bwd_dq_warp_%d", w), dim{tiles, H, B, awWarps * 32},
		dqs, dos, uint64(D.ptr), ls, qs, ks, vs, i64(B), i64(T), i64(H), i64(KVH), i64(hd), f32a(scale))
	// whale_attn_bwd_dkdv_warp_W: the arguments of whale_attn_bwd_dkdv_W
	b.launch(op, fmt.Sprintf("whale_attn_bwd_dkdv_warp_%d", w), dim{tiles, KVH, B, awWarps * 32},
		dks, dvs, dos, uint64(D.ptr), ls, qs, ks, vs, i64(B), i64(T), i64(H), i64(KVH), i64(hd), f32a(scale))
}

// SetThreadAttention selects Attention's (fwd) and AttentionBackward's
// (bwd) thread-per-row kernels, as WHALE_CUDA_ATTN_FWD=thread and
// WHALE_CUDA_ATTN_BWD=thread do when New runs, or the warp-per-row ones:
// the device tests check both.
func (b *Backend) SetThreadAttention(fwd, bwd bool) {
	defer b.lock()()
	b.attnFwdThread, b.attnBwdThread = fwd, bwd
}

// checkGrid panics when B or H exceed a grid's y/z dimension.
func checkGrid(op string, B, H int) {
	if B > 65535 || H > 65535 {
		panic(fmt.Sprintf("cuda: %s: %d sequences of %d heads do not fit a launch grid", op, B, H))
	}
}

// AttentionKV implements kernels.Backend: one block per (query row, query
// head), grid (rows, H), each row described by KV_ROW integers (kvRow) so
// that nothing of a row's work depends on the span it came in.
func (b *Backend) AttentionKV(out, q kernels.Tensor, spans []kernels.KVSpan, H, KVH, hd int) {
	const op = "AttentionKV"
	checkHeads(H, KVH, hd)
	if hd > kvMaxHD {
		panic(fmt.Sprintf("cuda: %s: head dim %d is more than %d", op, hd, kvMaxHD))
	}
	qw := H * hd
	var desc []int64
	for i, sp := range spans {
		n := sp.Pos0 + sp.Rows
		if n-sp.PN > sp.Cap {
			panic(fmt.Sprintf("kernels: AttentionKV span %d reaches position %d of a cache of %d after a prefix of %d", i, n, sp.Cap, sp.PN))
		}
		var pk, pv uint64
		if sp.PN > 0 {
			if sp.PN > sp.PCap || sp.Pos0 < sp.PN || sp.PN%kernels.KVBlock != 0 {
				panic(fmt.Sprintf("kernels: AttentionKV span %d: prefix of %d positions in a cache of %d, rows from position %d", i, sp.PN, sp.PCap, sp.Pos0))
			}
			pk, pv = f32(op, "PK", sp.PK, KVH*sp.PCap*hd), f32(op, "PV", sp.PV, KVH*sp.PCap*hd)
		}
		kp, vp := f32(op, "K", sp.K, KVH*sp.Cap*hd), f32(op, "V", sp.V, KVH*sp.Cap*hd)
		f32(op, "q", q, (sp.QRow+sp.Rows)*qw)
		f32(op, "out", out, (sp.QRow+sp.Rows)*qw)
		for r := 0; r < sp.Rows; r++ {
			// q row, n, K, V, cap, PK, PV, pcap, pn (KV_ROW of attention.cu)
			desc = append(desc, int64(sp.QRow+r), int64(sp.Pos0+r+1), int64(kp), int64(vp), int64(sp.Cap),
				int64(pk), int64(pv), int64(sp.PCap), int64(sp.PN))
		}
	}
	rows := len(desc) / kvRow
	if rows == 0 {
		return
	}
	if H > 65535 {
		panic(fmt.Sprintf("cuda: %s: %d heads do not fit a launch grid", op, H))
	}
	o, qs := f32(op, "out", out, -1), f32(op, "q", q, -1)
	scale := float32(1 / math.Sqrt(float64(hd)))
	defer b.enter(op)()
	db := b.upload(op, int64s(desc))
	defer b.release(db)
	// whale_attn_kv(float* out, const float* q, const i64* rows, i64 H, i64 KVH, i64 hd, float scale)
	b.launch(op, "whale_attn_kv", dim{rows, H, 1, kvThreads}, o, qs, uint64(db.ptr), i64(H), i64(KVH), i64(hd), f32a(scale))
}

// CacheWrite implements kernels.Backend: keys and values alike, position
// by position within a head. A write of a few rows is queued and launched
// with the others before the next op (cachebatch.go).
func (b *Backend) CacheWrite(cache, src kernels.Tensor, _ kernels.KVKind, pos0, rows, KVH, hd, cp int) {
	const op = "CacheWrite"
	d, s := f32(op, "cache", cache, KVH*cp*hd), f32(op, "src", src, rows*KVH*hd)
	if pos0 < 0 || pos0+rows > cp {
		panic(fmt.Sprintf("kernels: CacheWrite of positions %d..%d into a cache of %d", pos0, pos0+rows, cp))
	}
	if rows*KVH*hd == 0 {
		return
	}
	cb, _ := storage(cache)
	sb, _ := storage(src)
	defer b.enter(op)()
	if b.queueCacheWrite(cb, sb, d, s, pos0, rows, KVH, hd, cp) {
		return // launched with the next op (cachebatch.go)
	}
	// whale_cache_write(float* cache, const float* src, i64 pos0, i64 rows, i64 KVH, i64 hd, i64 cap)
	b.launch(op, "whale_cache_write", elems(rows*KVH*hd), d, s, i64(pos0), i64(rows), i64(KVH), i64(hd), i64(cp))
}

// CacheCopy implements kernels.Backend: one contiguous copy per KV head
// (a head's positions are contiguous in this layout, for keys and values
// alike).
func (b *Backend) CacheCopy(dst, src kernels.Tensor, _ kernels.KVKind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap int) {
	const op = "CacheCopy"
	d, s := f32(op, "dst", dst, KVH*dstCap*hd), f32(op, "src", src, KVH*srcCap*hd)
	if n < 0 || dstPos < 0 || srcPos < 0 || dstPos+n > dstCap || srcPos+n > srcCap {
		panic(fmt.Sprintf("kernels: CacheCopy of positions %d..%d to %d..%d between caches of %d and %d", srcPos, srcPos+n, dstPos, dstPos+n, srcCap, dstCap))
	}
	if n == 0 {
		return
	}
	sb, _ := storage(src)
	db, _ := storage(dst)
	defer b.enter(op)()
	for kh := 0; kh < KVH; kh++ {
		to := d + uint64((kh*dstCap+dstPos)*hd)*4
		from := s + uint64((kh*srcCap+srcPos)*hd)*4
		size := uint64(n*hd) * 4
		if sb == db && to < from+size && from < to+size {
			panic(fmt.Sprintf("kernels: CacheCopy of overlapping positions %d..%d to %d..%d of one cache", srcPos, srcPos+n, dstPos, dstPos+n))
		}
		b.check(op, cu.MemcpyDtoDAsync(cu.DevicePtr(to), cu.DevicePtr(from), int64(size), b.stream))
	}
}
