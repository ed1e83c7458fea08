package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAttentionBranchesAreTheSequencesAlone: a row holding a shared
// prefix and three branches (and padding), beside a row without branches,
// gives each branch position the output and log-sum-exp of its sequence
// (prefix then branch) laid out alone, and the backward pass gives each
// branch position its sequence's gradients and the prefix the sum of the
// sequences' gradients of it. Branches longer and shorter than a block
// of attnBlock rows, and one starting mid-block, are covered.
func TestAttentionBranchesAreTheSequencesAlone(t *testing.T) {
	eachImpl(t, func(t *testing.T) {
		const H, KVH, hd, P = 4, 2, 8, 20
		lens := []int{7, 50, 3}
		const T_ = P + 7 + 50 + 3 + 5 // five padding positions
		const plainLen = 30
		be := NewCPU()
		rng := rand.New(rand.NewPCG(4, 9))
		rand32 := func(n int) []float32 {
			h := make([]float32, n)
			for i := range h {
				h[i] = float32(rng.NormFloat64())
			}
			return h
		}
		qw, kw := H*hd, KVH*hd
		N := 2 * T_
		q, k, v, dout := rand32(N*qw), rand32(N*kw), rand32(N*kw), rand32(N*qw)
		// Padding carries no loss, so no gradient comes back to it (as in
		// the model): the rows' real positions then get only their own.
		clear(dout[(P+7+50+3)*qw : T_*qw])
		clear(dout[(T_+plainLen)*qw:])
		br := Branches{Shared: []int32{P, 0}, Start: make([]int32, N)}
		var starts []int
		s := P
		for _, n := range lens {
			starts = append(starts, s)
			for j := s; j < s+n; j++ {
				br.Start[j] = int32(s)
			}
			s += n
		}
		load := func(h []float32) Tensor { x := be.Alloc(len(h)); be.Load(x, h); return x }
		store := func(x Tensor) []float32 { h := make([]float32, x.Len()); be.Store(h, x); return h }
		out, lse := be.Alloc(N*qw), be.Alloc(2*H*T_)
		be.AttentionBranches(out, lse, load(q), load(k), load(v), br, 2, T_, H, KVH, hd)
		dq, dk, dv := be.Alloc(N*qw), be.Alloc(N*kw), be.Alloc(N*kw)
		be.AttentionBranchesBackward(dq, dk, dv, load(dout), out, lse, load(q), load(k), load(v), br, 2, T_, H, KVH, hd)
		gotO, gotL, gotDQ, gotDK, gotDV := store(out), store(lse), store(dq), store(dk), store(dv)

		// alone runs one sequence laid out by itself, given as the rows of
		// the branch layout it takes, with dout kept where doutRows says
		// (the prefix's loss is counted in one sequence only, so that the
		// sequences' prefix gradients sum to the branch row's).
		alone := func(rows []int, doutRows []bool) (o, l, gq, gk, gv []float32) {
			n := len(rows)
			pick := func(src []float32, w int, zero []bool) []float32 {
				h := make([]float32, n*w)
				for i, r := range rows {
					if zero == nil || !zero[i] {
						copy(h[i*w:i*w+w], src[r*w:r*w+w])
					}
				}
				return h
			}
			zero := make([]bool, n)
			for i := range zero {
				zero[i] = !doutRows[i]
			}
			qs, ks, vs := load(pick(q, qw, nil)), load(pick(k, kw, nil)), load(pick(v, kw, nil))
			oo, ll := be.Alloc(n*qw), be.Alloc(H*n)
			be.Attention(oo, ll, qs, ks, vs, 1, n, H, KVH, hd)
			a, b, c := be.Alloc(n*qw), be.Alloc(n*kw), be.Alloc(n*kw)
			be.AttentionBackward(a, b, c, load(pick(dout, qw, zero)), oo, ll, qs, ks, vs, 1, n, H, KVH, hd)
			return store(oo), store(ll), store(a), store(b), store(c)
		}
		maxAbs := 0.0
		for _, x := range append(append([]float32(nil), gotDQ...), gotDK...) {
			maxAbs = max(maxAbs, math.Abs(float64(x)))
		}
		// Sums of the same terms in another order: float32 rounding of
		// values up to maxAbs.
		tol := 1e-5 * max(1, maxAbs)
		near := func(what string, got, want float32) {
			t.Helper()
			if d := math.Abs(float64(got - want)); !(d <= tol) {
				t.Fatalf("%s: %v in the branch row, %v alone", what, got, want)
			}
		}
		prefixDK, prefixDV := make([]float32, P*kw), make([]float32, P*kw)
		for bi, s := range starts {
			var rows []int
			keep := make([]bool, 0, P+lens[bi])
			for i := 0; i < P; i++ {
				rows, keep = append(rows, i), append(keep, bi == 0)
			}
			for i := s; i < s+lens[bi]; i++ {
				rows, keep = append(rows, i), append(keep, true)
			}
			o, l, gq, gk, gv := alone(rows, keep)
			for i, r := range rows {
				for h := 0; h < H; h++ {
					near("lse", gotL[h*T_+r], l[h*len(rows)+i])
				}
				if i >= P || bi == 0 {
					for j := 0; j < qw; j++ {
						near("out", gotO[r*qw+j], o[i*qw+j])
						near("dq", gotDQ[r*qw+j], gq[i*qw+j])
					}
				}
				for j := 0; j < kw; j++ {
					if i < P {
						prefixDK[i*kw+j] += gk[i*kw+j]
						prefixDV[i*kw+j] += gv[i*kw+j]
						continue
					}
					near("dk", gotDK[r*kw+j], gk[i*kw+j])
					near("dv", gotDV[r*kw+j], gv[i*kw+j])
				}
			}
		}
		for j := range prefixDK {
			near("prefix dk", gotDK[j], prefixDK[j])
			near("prefix dv", gotDV[j], prefixDV[j])
		}
		// The row without branches is causal attention over its own
		// positions, padding after them.
		rows, keep := make([]int, plainLen), make([]bool, plainLen)
		for i := range rows {
			rows[i], keep[i] = T_+i, true
		}
		o, _, gq, gk, gv := alone(rows, keep)
		for i, r := range rows {
			for j := 0; j < qw; j++ {
				near("plain row out", gotO[r*qw+j], o[i*qw+j])
				near("plain row dq", gotDQ[r*qw+j], gq[i*qw+j])
			}
			for j := 0; j < kw; j++ {
				near("plain row dk", gotDK[r*kw+j], gk[i*kw+j])
				near("plain row dv", gotDV[r*kw+j], gv[i*kw+j])
			}
		}
	})
}

// TestBranchesRefuseALayoutTheyCannotHold: a branch that starts inside
// the prefix, after its own position, or a table of the wrong size is a
// panic naming it, not a wrong result.
func TestBranchesRefuseALayoutTheyCannotHold(t *testing.T) {
	for _, c := range []struct {
		name string
		br   Branches
		want string
	}{
		{"wrong rows", Branches{Shared: []int32{2, 0}, Start: make([]int32, 4)}, "2 rows and 4 positions, want 1 and 4"},
		{"branch in the prefix", Branches{Shared: []int32{3}, Start: []int32{0, 0, 0, 2}}, "starts its branch at 2 (prefix 3)"},
		{"branch after itself", Branches{Shared: []int32{1}, Start: []int32{0, 2, 2, 2}}, "position 1 starts its branch at 2"},
		{"prefix past the row", Branches{Shared: []int32{5}, Start: make([]int32, 4)}, "shares 5 positions of 4"},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, c.want) {
					t.Errorf("%s: panic %v, want one saying %q", c.name, r, c.want)
				}
			}()
			c.br.check(1, 4)
		}()
	}
}
