package kernels

import "fmt"

// Branches lays out training rows that each hold a prompt several
// sequences share, followed by those sequences' own positions, one branch
// each: the prompt runs through the model once, not once per sequence.
// Row b's first Shared[b] positions are the prefix; position i of row b
// (index b·T+i) belongs to the branch that begins at row index Start[b·T+i]
// (0 for prefix positions, for every position of a row without branches,
// and for a row's padding). A position sees the prefix and its own branch
// up to itself: keys [0, min(Shared[b], Start)) and [Start, i]. A
// branch's positions carry their own sequence's RoPE positions, so each
// sees exactly the keys, at the positions, it would see alone.
type Branches struct {
	Shared []int32 // per row
	Start  []int32 // per position
}

// BranchAttention is implemented by backends that run training attention
// over rows laid out as Branches. The model packs sequences that share a
// prompt that way only on such a backend; elsewhere each sequence is a row
// of its own, with the same gradients.
type BranchAttention interface {
	// AttentionBranches is Attention over rows laid out as br.
	AttentionBranches(out, lse, q, k, v Tensor, br Branches, B, T, H, KVH, hd int)
	// AttentionBranchesBackward is AttentionBackward over rows laid out
	// as br.
	AttentionBranchesBackward(dq, dk, dv, dout, out, lse, q, k, v Tensor, br Branches, B, T, H, KVH, hd int)
}

// check panics unless br describes B rows of T positions.
func (br *Branches) check(B, T int) {
	if len(br.Shared) != B || len(br.Start) != B*T {
		panic(fmt.Sprintf("kernels: branches for %d rows and %d positions, want %d and %d", len(br.Shared), len(br.Start), B, B*T))
	}
	for b, p := range br.Shared {
		if p < 0 || int(p) > T {
			panic(fmt.Sprintf("kernels: branches: row %d shares %d positions of %d", b, p, T))
		}
		for i := 0; i < T; i++ {
			if s := br.Start[b*T+i]; s < 0 || int(s) > i || (s > 0 && s < p) {
				panic(fmt.Sprintf("kernels: branches: row %d position %d starts its branch at %d (prefix %d)", b, i, s, p))
			}
		}
	}
}

// gap returns the keys [lo, hi) that position i of row b does not see:
// the other branches between the prefix and its own (lo == hi when none,
// and always for a nil br).
func (br *Branches) gap(b, i, T int) (lo, hi int) {
	if br == nil {
		return 0, 0
	}
	s, p := int(br.Start[b*T+i]), int(br.Shared[b])
	if s <= p {
		return 0, 0
	}
	return p, s
}

// closeGap moves the scores of keys [hi, i] of a row to start at lo, so
// that the keys the position sees are row[:n], in key order, and returns n.
func closeGap[T Float](row []T, lo, hi, i int) int {
	if lo == hi {
		return i + 1
	}
	copy(row[lo:], row[hi:i+1])
	return lo + i + 1 - hi
}

// openGap undoes closeGap and zeroes the keys the position does not see,
// so that the products after it add nothing from them.
func openGap[T Float](row []T, lo, hi, i int) {
	if lo == hi {
		return
	}
	copy(row[hi:i+1], row[lo:lo+i+1-hi])
	clear(row[lo:hi])
}
