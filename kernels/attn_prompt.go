package kernels

import "math"

// A prompt's rows in AttentionKV (prefill: most of the attention a
// rollout workload computes, since every evaluation after a weight step
// computes its prompts again) each read every position before them. One
// at a time, a row's scores and value sums are matrix-vector products
// that the decode kernels (attn_decode.go) run at the AVX2 FMA peak at
// best. Twelve consecutive rows of one query head against the same keys
// and values are a matrix product instead, which the AVX-512 GEMM tile
// (kern12x32) runs at about twice that.
//
// The tile gives every row the bits of the decode kernels: a score is
// one FMA chain over the head's dimensions in increasing order starting
// from zero (kern12x32's chain over k = hd), and a value sum one FMA chain
// over the positions in increasing order, prefix cache first, starting
// from zero (kern12x32's chain over k = positions, over one contiguous
// copy of the prefix's and the sequence's values). The positions a row
// does not see get the decode path's padding: −∞ scores up to the row's
// whole vector of 8, then zero probabilities, and fma(0, v, acc) = acc
// exactly, so the chain over the tile's last row's positions ends where
// the row's own would. Softmax and normalisation are the decode path's
// (softExp, then a multiply by 1/sum). So a prompt row's output does not
// depend on whether it was computed in a tile, alone, or in a later turn
// that reuses the prompt's cache (TestPromptTilesMatchRowByRow).

// promptTile is how many consecutive query rows of a prompt AttentionKV
// computes together (kern12x32's rows).
const promptTile = 12

// attnTiles says whether AttentionKV computes a prompt's rows in tiles:
// where the strided tile runs in assembly, the AVX-512 kernels or their
// AVX2 form (gemm_strided_amd64.s), whose chains are the decode kernels'.
// prefixTiles says whether it also computes the rows that share a prefix
// cache (attn_shared.go) and the spans that share a root (attn_root.go)
// as tiles: on AVX-512 only, since on an AVX2 machine (Zen 3) transposing
// the prefix for each step cost more than the tiles saved (docs/
// PERFORMANCE.md, "lanes", measured with 8 samples a prompt). Tests and
// benchmarks turn them off to compare.
var (
	attnTiles   = useAsm
	prefixTiles = useAVX512
)

// promptTiles says whether AttentionKV computes a prompt's rows in tiles
// for head dimension hd: the float32 backend with attnTiles and hd a
// multiple of kern12x32's 32 columns.
func promptTiles(hd int) bool { return attnTiles && hd%32 == 0 }

// promptState is one worker's scratch for prompt tiles: the keys of one
// (span, KV head) transposed to dimension-major rows of ld positions (the
// B operand of the score product), with a span that has a prefix its
// values copied after the prefix's into one run of positions, and the
// scores and outputs of one tile. A worker takes its units in order, a
// span's tiles in increasing rows, so each tile transposes and copies
// only the positions the previous one did not reach.
type promptState[T Float] struct {
	kt, v, s, ob []T
	span, head   int
	ld, n        int // kt's row length; positions held in kt and v
}

// reset points st at (span, head), holding no positions, with room for
// positions positions of head dimension hd.
func (st *promptState[T]) reset(span, head, positions, hd int) {
	st.span, st.head, st.n = span, head, 0
	st.ld = roundUp(positions, 32)
	st.kt = grow(st.kt, hd*st.ld)
	st.v = grow(st.v, positions*hd)
	st.s = grow(st.s, promptTile*st.ld)
	st.ob = grow(st.ob, promptTile*hd)
}

// kvTranspose sets dst[d*ld+shift+p] to dimension d of position p of one
// head's key cache src (capacity cap, kvAt) for from ≤ p < n.
func kvTranspose(dst []float32, ld, shift int, src []float32, cap, hd, from, n int) {
	for p := from; p < n; {
		b := p &^ (kvBlock - 1)
		w := kvWidth(cap, p)
		e := min(b+w, n)
		at := b*hd + p - b
		for d := 0; d < hd; d++ {
			copy(dst[d*ld+shift+p:d*ld+shift+e], src[at+d*w:at+d*w+e-p])
		}
		p = e
	}
}

// promptRows computes AttentionKV's outputs for the promptTile query rows
// from row r0 of span sp (index s) and every query head of KV head kh: k,
// v, pk and pv are the span's caches (all heads), o and qs the call's
// outputs and queries (qw elements a row).
func promptRows(st *promptState[float32], o, qs []float32, sp KVSpan, s, r0, kh, grp, hd, qw int, k, v, pk, pv []float32, scale float32) {
	cp, pn, pcp := sp.Cap, sp.PN, sp.PCap
	nmax := sp.Pos0 + r0 + promptTile // positions the tile's last row sees
	if st.span != s || st.head != kh || st.n > nmax {
		st.reset(s, kh, sp.Pos0+sp.Rows, hd)
	}
	kt, vt := k[kh*hd*cp:(kh+1)*hd*cp], v[kh*hd*cp:(kh+1)*hd*cp]
	if st.n < pn {
		pkt, pvt := pk[kh*hd*pcp:(kh+1)*hd*pcp], pv[kh*hd*pcp:(kh+1)*hd*pcp]
		kvTranspose(st.kt, st.ld, 0, pkt, pcp, hd, st.n, pn)
		copy(st.v[st.n*hd:pn*hd], pvt[st.n*hd:pn*hd])
		st.n = pn
	}
	if st.n < nmax {
		kvTranspose(st.kt, st.ld, pn, kt, cp, hd, st.n-pn, nmax-pn)
		if pn > 0 {
			copy(st.v[st.n*hd:nmax*hd], vt[(st.n-pn)*hd:(nmax-pn)*hd])
		}
		st.n = nmax
	}
	vals := vt // position by position from 0: the own cache, or the copy after a prefix
	if pn > 0 {
		vals = st.v
	}
	ld, n32 := st.ld, roundUp(nmax, 32)
	negInf := float32(math.Inf(-1))
	for g := 0; g < grp; g++ {
		h := kh*grp + g
		qa := qs[(sp.QRow+r0)*qw+h*hd:]
		for j := 0; j < n32; j += 32 {
			kern12x32(hd, qa, qw, 1, st.kt[j:], 16, ld, st.s[j:], ld, false)
		}
		var sums [promptTile]float32
		for i := 0; i < promptTile; i++ {
			n := sp.Pos0 + r0 + i + 1
			ldn := (n + kvBlock - 1) &^ (kvBlock - 1)
			row := st.s[i*ld : i*ld+ld]
			for p := n; p < ldn; p++ {
				row[p] = negInf
			}
			sums[i] = softExp(row[:ldn], scale)
			if ldn < nmax {
				clear(row[ldn:nmax])
			}
		}
		for j := 0; j < hd; j += 32 {
			kern12x32(nmax, st.s, ld, 1, vals[j:], 16, hd, st.ob[j:], hd, false)
		}
		for i := 0; i < promptTile; i++ {
			inv := 1 / sums[i]
			dst := o[(sp.QRow+r0+i)*qw+h*hd:][:hd]
			for j, x := range st.ob[i*hd : i*hd+hd] {
				dst[j] = x * inv
			}
		}
	}
}
