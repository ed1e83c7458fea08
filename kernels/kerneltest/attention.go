package kerneltest

import (
	"fmt"

	"whale/kernels"
)

// AttnShape is the heads of one attention configuration: H query heads
// reading KVH key/value heads of HD elements.
type AttnShape struct{ H, KVH, HD int }

func (s AttnShape) String() string { return fmt.Sprintf("H%dKV%dhd%d", s.H, s.KVH, s.HD) }

// AttnConfig is one training attention call: B sequences of T positions.
type AttnConfig struct {
	B, T int
	AttnShape
}

func (a AttnConfig) String() string { return fmt.Sprintf("B%dT%d%s", a.B, a.T, a.AttnShape) }

// TrainingAttention are the Attention/AttentionBackward configurations:
// GQA (H/KVH > 1) at head sizes 32 to 128, T not a multiple of 32 or 64
// among them, hd 6 (the tiny preset's odd head size); then groups of one
// (H = KVH = 1), tiny head sizes and T = 70, one past the CPU's 64-row
// attention block, each with one and two sequences.
var TrainingAttention = []AttnConfig{
	{1, 1, AttnShape{4, 2, 32}}, {1, 7, AttnShape{4, 2, 6}}, {2, 33, AttnShape{4, 2, 32}}, {1, 64, AttnShape{4, 2, 64}},
	{2, 100, AttnShape{4, 2, 128}}, {1, 130, AttnShape{4, 2, 32}}, {2, 257, AttnShape{4, 2, 64}},
	{1, 129, AttnShape{8, 2, 32}}, {1, 200, AttnShape{16, 8, 128}},
	{1, 1, AttnShape{1, 1, 2}}, {2, 1, AttnShape{1, 1, 2}}, {1, 3, AttnShape{2, 1, 6}}, {2, 3, AttnShape{2, 1, 6}},
	{1, 7, AttnShape{4, 2, 8}}, {2, 7, AttnShape{4, 2, 8}}, {1, 70, AttnShape{2, 1, 4}}, {2, 70, AttnShape{2, 1, 4}},
	{1, 21, AttnShape{8, 2, 12}}, {2, 21, AttnShape{8, 2, 12}}, {1, 70, AttnShape{4, 1, 8}}, {2, 70, AttnShape{4, 1, 8}},
}

// AttentionCases returns the two cases of a training attention call:
// the forward's out and lse, and the backward's dq, dk, dv (after each
// backend's own forward).
func AttentionCases(a AttnConfig) []Case {
	B, T, H, KVH, hd := a.B, a.T, a.H, a.KVH, a.HD
	N := B * T
	large := B*T*T*H*hd/8 > huge // the reference's cost: T²/2 products of hd a head
	return []Case{
		{Name: "Attention/" + a.String(), Op: "Attention", DType: F32, Large: large, Run: func(e *Env) {
			q, k, v := e.In(N*H*hd), e.In(N*KVH*hd), e.In(N*KVH*hd)
			out, lse := e.In(N*H*hd), e.In(B*H*T)
			e.Be.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
			e.Out("out", out)
			e.Out("lse", lse)
		}},
		{Name: "AttentionBackward/" + a.String(), Op: "AttentionBackward", DType: F32, Large: large, Run: func(e *Env) {
			q, k, v := e.In(N*H*hd), e.In(N*KVH*hd), e.In(N*KVH*hd)
			out, lse := e.Zeros(N*H*hd), e.Zeros(B*H*T)
			e.Be.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
			dq, dk, dv := e.In(N*H*hd), e.In(N*KVH*hd), e.In(N*KVH*hd)
			e.Be.AttentionBackward(dq, dk, dv, e.In(N*H*hd), out, lse, q, k, v, B, T, H, KVH, hd)
			e.Out("dq", dq)
			e.Out("dk", dk)
			e.Out("dv", dv)
		}},
	}
}

// kvShapes are AttentionKV's and the caches' head configurations: the
// model's GQA shapes and hd 6, then groups of one to eight query heads a
// KV head at tiny head sizes.
var kvShapes = []AttnShape{{4, 2, 32}, {4, 2, 128}, {8, 2, 32}, {4, 2, 6}, {16, 8, 128},
	{1, 1, 2}, {2, 1, 6}, {4, 2, 8}, {2, 1, 4}, {8, 2, 12}, {4, 1, 8}}

// attentionKV: AttentionKV over several spans a call with and without a
// prefix split, CacheWrite and CacheCopy (seen through AttentionKV: a
// cache's layout is the backend's own).
func (t *table) attentionKV() {
	for _, s := range kvShapes {
		for _, split := range []bool{false, true} {
			t.sized(s.H*s.HD*1024).add("AttentionKV", F32, false, fmt.Sprintf("AttentionKV/%s/split=%v", s, split), func(e *Env) {
				k := NewKVCall(e, s, KVSpecs, split)
				e.Out("out", k.Attend(e))
			})
		}
		t.sized(s.H*s.HD*1024).add("CacheCopy", F32, false, "CacheCopy/"+s.String(), func(e *Env) { cacheCopyCase(e, s) })
	}
}

// KVSpec is one sequence of an AttentionKV call: Rows query rows at
// positions Pos0.., with the first PN positions (a multiple of
// kernels.KVBlock) in a prefix cache when the call is split.
type KVSpec struct{ Pos0, Rows, PN int }

// KVSpecs: prefill from the start; prefill continuing after a one-block
// prefix; a decoding row after a two-block prefix; a decoding row with no
// prefix; prefill across a block boundary in one cache.
var KVSpecs = []KVSpec{{0, 37, 0}, {131, 6, 128}, {299, 1, 256}, {200, 1, 0}, {100, 60, 0}}

// KVCall is the spans of one AttentionKV call with their queries.
type KVCall struct {
	Shape AttnShape
	Spans []kernels.KVSpan
	Q     kernels.Tensor
	Rows  int
}

// NewKVCall fills a cache pair per spec (in two CacheWrite calls, the
// second at a position > 0) and, when split, moves each spec's first PN
// positions to a prefix cache with room to spare and the rest to a cache
// of its own, as the sampler lays out a shared prompt.
func NewKVCall(e *Env, s AttnShape, specs []KVSpec, split bool) *KVCall {
	w := s.KVH * s.HD
	c := &KVCall{Shape: s}
	for _, sp := range specs {
		n := sp.Pos0 + sp.Rows
		cp := n + 3
		kc, vc := e.Zeros(w*cp), e.Zeros(w*cp)
		kh, vh := e.In(n*w), e.In(n*w)
		h := n / 2
		for kind, kv := range [][2]kernels.Tensor{{kc, kh}, {vc, vh}} {
			e.Be.CacheWrite(kv[0], kv[1].View(0, h*w), kernels.KVKind(kind), 0, h, s.KVH, s.HD, cp)
			e.Be.CacheWrite(kv[0], kv[1].View(h*w, (n-h)*w), kernels.KVKind(kind), h, n-h, s.KVH, s.HD, cp)
		}
		span := kernels.KVSpan{K: kc, V: vc, Cap: cp, QRow: c.Rows, Rows: sp.Rows, Pos0: sp.Pos0}
		if split && sp.PN > 0 {
			pcap, ocap := sp.PN+5, n-sp.PN+2
			pk, pv, ok, ov := e.Zeros(w*pcap), e.Zeros(w*pcap), e.Zeros(w*ocap), e.Zeros(w*ocap)
			e.Be.CacheCopy(pk, kc, kernels.Keys, 0, 0, sp.PN, s.KVH, s.HD, pcap, cp)
			e.Be.CacheCopy(pv, vc, kernels.Values, 0, 0, sp.PN, s.KVH, s.HD, pcap, cp)
			e.Be.CacheCopy(ok, kc, kernels.Keys, 0, sp.PN, n-sp.PN, s.KVH, s.HD, ocap, cp)
			e.Be.CacheCopy(ov, vc, kernels.Values, 0, sp.PN, n-sp.PN, s.KVH, s.HD, ocap, cp)
			span.K, span.V, span.Cap = ok, ov, ocap
			span.PK, span.PV, span.PCap, span.PN = pk, pv, pcap, sp.PN
		}
		c.Spans = append(c.Spans, span)
		c.Rows += sp.Rows
	}
	c.Q = e.In(c.Rows * s.H * s.HD)
	return c
}

// Attend runs the call into a fresh output (garbage-filled: every row
// must be written).
func (c *KVCall) Attend(e *Env) kernels.Tensor {
	out := e.In(c.Rows * c.Shape.H * c.Shape.HD)
	e.Be.AttentionKV(out, c.Q, c.Spans, c.Shape.H, c.Shape.KVH, c.Shape.HD)
	return out
}

// cacheCopyCase moves a sequence's cache into a larger one in two chunks
// (srcPos, dstPos > 0), through a shifted copy (dstPos ≠ srcPos) and back,
// and attends with the result.
func cacheCopyCase(e *Env, s AttnShape) {
	w := s.KVH * s.HD
	c := NewKVCall(e, s, []KVSpec{{150, 40, 0}}, false)
	src := c.Spans[0]
	n := 190
	bigCap, shiftCap := n+20, n+9
	for i, t := range []kernels.Tensor{src.K, src.V} {
		big, shifted, back := e.Zeros(w*bigCap), e.Zeros(w*shiftCap), e.Zeros(w*bigCap)
		kind := kernels.KVKind(i)
		e.Be.CacheCopy(big, t, kind, 0, 0, 70, s.KVH, s.HD, bigCap, src.Cap)
		e.Be.CacheCopy(big, t, kind, 70, 70, n-70, s.KVH, s.HD, bigCap, src.Cap)
		e.Be.CacheCopy(shifted, big, kind, 7, 0, n, s.KVH, s.HD, shiftCap, bigCap)
		e.Be.CacheCopy(back, shifted, kind, 0, 7, n, s.KVH, s.HD, bigCap, shiftCap)
		if i == 0 {
			c.Spans[0].K = back
		} else {
			c.Spans[0].V = back
		}
	}
	c.Spans[0].Cap = bigCap
	e.Out("out", c.Attend(e))
}
