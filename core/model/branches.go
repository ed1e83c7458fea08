package model

import "whale/kernels"

// minShared is the fewest positions a group of sequences must share for
// packTrain to run them once: a few shared tokens do not pay for a
// longer row's attention.
const minShared = 16

// shareGroup is a run of adjacent sequences of a micro-batch that begin
// with the same common tokens (a task's samples share its prompt).
type shareGroup struct {
	members []int
	common  int
}

// shareGroups groups adjacent sequences by their common beginning: a
// sequence joins the group before it when it shares more than minShared
// tokens with the group's first, and the positions the group then saves
// (each member but one skips the shared ones) are no fewer than before
// it joined, what the group shares shortened to what it shares with the
// newcomer. A group of one shares its whole sequence with itself.
func shareGroups(seqs []Sequence) []shareGroup {
	var gs []shareGroup
	for i, q := range seqs {
		if n := len(gs); n > 0 {
			g := &gs[n-1]
			c := min(g.common, commonPrefix(seqs[g.members[0]].Tokens, q.Tokens))
			if m := len(g.members); c > minShared && m*(c-1) >= (m-1)*(g.common-1) {
				g.common = c
				g.members = append(g.members, i)
				continue
			}
		}
		gs = append(gs, shareGroup{members: []int{i}, common: len(q.Tokens)})
	}
	return gs
}

// packTrain packs a micro-batch for a training step. On a backend with
// kernels.BranchAttention, adjacent sequences that begin with the same
// tokens share one row: the positions whose inputs and targets they all
// share once, weighted by the sum of their masks, then each sequence's
// own positions as a branch that sees the shared ones and its own
// (kernels.Branches), at its own RoPE positions. Every position then sees
// what it sees in a row of its own and the loss is linear in the weights,
// so the loss and gradients are pack's sums in another order; the shared
// prompt runs through the forward and backward passes once. It is used
// when its rows hold fewer positions, padding included, than pack's.
func (m *Model) packTrain(seqs []Sequence, scale float64) *packed {
	if _, ok := m.be.(kernels.BranchAttention); !ok {
		return m.pack(seqs, scale)
	}
	gs := shareGroups(seqs)
	if len(gs) == len(seqs) {
		return m.pack(seqs, scale)
	}
	shared := func(g shareGroup) int { return g.common - 1 } // positions whose inputs and targets all share
	T := 1
	for _, g := range gs {
		n := shared(g)
		if len(g.members) == 1 {
			n = len(seqs[g.members[0]].Tokens) - 1
		} else {
			for _, k := range g.members {
				n += len(seqs[k].Tokens) - 1 - shared(g)
			}
		}
		T = max(T, n)
	}
	B := len(gs)
	if B*T >= len(seqs)*rowLen(seqs) {
		return m.pack(seqs, scale)
	}
	N := B * T
	p := &packed{B: B, T: T, tokens: make([]int32, N), targets: make([]int32, N), pos: make([]int32, N), weight: make([]float32, N),
		br: &kernels.Branches{Shared: make([]int32, B), Start: make([]int32, N)}}
	for b, g := range gs {
		r := b * T
		put := func(q Sequence, t int, w float64) {
			p.tokens[r], p.targets[r], p.pos[r], p.weight[r] = q.Tokens[t], q.Tokens[t+1], int32(t), float32(w*scale)
			r++
		}
		if len(g.members) == 1 {
			q := seqs[g.members[0]]
			for t := 0; t+1 < len(q.Tokens); t++ {
				put(q, t, float64(q.Mask[t+1]))
			}
			continue
		}
		P := shared(g)
		first := seqs[g.members[0]]
		for t := 0; t < P; t++ {
			w := 0.0
			for _, k := range g.members {
				w += float64(seqs[k].Mask[t+1])
			}
			put(first, t, w)
		}
		p.br.Shared[b] = int32(P)
		for _, k := range g.members {
			q, start := seqs[k], int32(r-b*T)
			for t := P; t+1 < len(q.Tokens); t++ {
				p.br.Start[r] = start
				put(q, t, float64(q.Mask[t+1]))
			}
		}
	}
	return p
}
