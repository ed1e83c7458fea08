package kernels

import (
	"fmt"
	"math"
	"sort"
)

func checkHeads(H, KVH, hd int) {
	if H <= 0 || KVH <= 0 || hd <= 0 || H%KVH != 0 {
		panic(fmt.Sprintf("kernels: attention with %d heads, %d KV heads, head dim %d", H, KVH, hd))
	}
}

// attnRow computes one query row's causal attention over n keys: out (hd) =
// softmax(scale·q·Kᵀ)·V where key j is k[j*ks : j*ks+hd] (likewise v). It
// returns the row's log-sum-exp. sc is scratch of at least n elements. Both
// training and cached attention call it, so a row's result depends only on
// its query and the keys it sees.
func attnRow[T Float](out, q, k, v []T, ks, n, hd int, scale T, sc []T, dot func(a, b []T) T, axpy func(T, []T, []T), exp func(T) T) float64 {
	sc = sc[:n]
	mx := T(math.Inf(-1))
	for j := range sc {
		s := dot(q, k[j*ks:j*ks+hd]) * scale
		sc[j] = s
		mx = max(mx, s)
	}
	var sum float64
	for j, s := range sc {
		p := exp(s - mx)
		sc[j] = p
		sum += float64(p)
	}
	clear(out[:hd])
	for j, p := range sc {
		axpy(p, v[j*ks:j*ks+hd], out[:hd])
	}
	inv := T(1 / sum)
	for i := range out[:hd] {
		out[i] *= inv
	}
	return float64(mx) + math.Log(sum)
}

// Attention implements Backend, parallel over (sequence, head, query row).
func (c *CPU[T]) Attention(out, lse, q, k, v Tensor, B, T_, H, KVH, hd int) {
	checkHeads(H, KVH, hd)
	o, ls, qs, kk, vs := c.s(out), c.s(lse), c.s(q), c.s(k), c.s(v)
	N := B * T_
	need("Attention out", len(o), N*H*hd)
	need("Attention lse", len(ls), B*H*T_)
	need("Attention q", len(qs), N*H*hd)
	need("Attention k", len(kk), N*KVH*hd)
	need("Attention v", len(vs), N*KVH*hd)
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw, kw := H*hd, KVH*hd
	Parallel(B*H*T_, 1+(1<<14)/(1+T_*hd), func(lo, hi int) {
		sc := make([]T, T_)
		for u := lo; u < hi; u++ {
			i := u % T_
			h := (u / T_) % H
			b := u / (T_ * H)
			kh := h / grp
			row := b*T_ + i
			base := b*T_*kw + kh*hd
			ls[u] = T(attnRow(o[row*qw+h*hd:], qs[row*qw+h*hd:row*qw+h*hd+hd], kk[base:], vs[base:], kw, i+1, hd, scale, sc, c.dot, c.axpy, c.exp))
		}
	})
}

// AttentionBackward implements Backend, parallel over (sequence, KV head):
// each worker owns the dk and dv rows of its KV head and the dq rows of the
// query heads that read it, and adds into them in a fixed order.
func (c *CPU[T]) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v Tensor, B, T_, H, KVH, hd int) {
	checkHeads(H, KVH, hd)
	dqs, dks, dvs, dos, os, ls := c.s(dq), c.s(dk), c.s(dv), c.s(dout), c.s(out), c.s(lse)
	qs, kk, vs := c.s(q), c.s(k), c.s(v)
	N := B * T_
	for _, x := range []struct {
		n    string
		l, w int
	}{{"dq", len(dqs), N * H * hd}, {"dk", len(dks), N * KVH * hd}, {"dv", len(dvs), N * KVH * hd},
		{"dout", len(dos), N * H * hd}, {"out", len(os), N * H * hd}, {"lse", len(ls), B * H * T_},
		{"q", len(qs), N * H * hd}, {"k", len(kk), N * KVH * hd}, {"v", len(vs), N * KVH * hd}} {
		need("AttentionBackward "+x.n, x.l, x.w)
	}
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw, kw := H*hd, KVH*hd
	Parallel(B*KVH, 1, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			b, kh := u/KVH, u%KVH
			base := b*T_*kw + kh*hd
			for h := kh * grp; h < kh*grp+grp; h++ {
				for i := 0; i < T_; i++ {
					row := b*T_ + i
					qi := qs[row*qw+h*hd : row*qw+h*hd+hd]
					doi := dos[row*qw+h*hd : row*qw+h*hd+hd]
					dqi := dqs[row*qw+h*hd : row*qw+h*hd+hd]
					D := c.dot(doi, os[row*qw+h*hd:row*qw+h*hd+hd])
					l := ls[(b*H+h)*T_+i]
					for j := 0; j <= i; j++ {
						kj := kk[base+j*kw : base+j*kw+hd]
						vj := vs[base+j*kw : base+j*kw+hd]
						p := c.exp(c.dot(qi, kj)*scale - l)
						ds := p * (c.dot(doi, vj) - D) * scale
						c.axpy(ds, kj, dqi)
						c.axpy(ds, qi, dks[base+j*kw:base+j*kw+hd])
						c.axpy(p, doi, dvs[base+j*kw:base+j*kw+hd])
					}
				}
			}
		}
	})
}

// AttentionKV implements Backend, parallel over (span, query row, head).
func (c *CPU[T]) AttentionKV(out, q Tensor, spans []KVSpan, H, KVH, hd int) {
	checkHeads(H, KVH, hd)
	o, qs := c.s(out), c.s(q)
	grp := H / KVH
	scale := T(1 / math.Sqrt(float64(hd)))
	qw, kw := H*hd, KVH*hd
	start := make([]int, len(spans)+1) // first unit of each span
	ks := make([][]T, len(spans))
	vs := make([][]T, len(spans))
	maxN := 0
	for i, sp := range spans {
		ks[i], vs[i] = c.s(sp.K), c.s(sp.V)
		n := sp.Pos0 + sp.Rows
		need("AttentionKV K", len(ks[i]), n*kw)
		need("AttentionKV V", len(vs[i]), n*kw)
		need("AttentionKV q", len(qs), (sp.QRow+sp.Rows)*qw)
		need("AttentionKV out", len(o), (sp.QRow+sp.Rows)*qw)
		maxN = max(maxN, n)
		start[i+1] = start[i] + sp.Rows*H
	}
	Parallel(start[len(spans)], 1+(1<<13)/(1+maxN*hd), func(lo, hi int) {
		sc := make([]T, maxN)
		for u := lo; u < hi; u++ {
			s := sort.SearchInts(start, u+1) - 1
			sp := spans[s]
			r, h := (u-start[s])/H, (u-start[s])%H
			row := sp.QRow + r
			kb := (h / grp) * hd
			attnRow(o[row*qw+h*hd:], qs[row*qw+h*hd:row*qw+h*hd+hd], ks[s][kb:], vs[s][kb:], kw, sp.Pos0+r+1, hd, scale, sc, c.dot, c.axpy, c.exp)
		}
	})
}
