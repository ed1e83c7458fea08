package data

import (
	"fmt"
	"math/rand/v2"
)

// Sizes are the sizes of the four splits.
type Sizes struct {
	Train, Val, Audit, Test int
}

// DefaultSizes are the split sizes of generated domains.
var DefaultSizes = Sizes{Train: 4096, Val: 256, Audit: 128, Test: 512}

// Total is the number of tasks over all splits.
func (s Sizes) Total() int { return s.Train + s.Val + s.Audit + s.Test }

// Scaled shrinks s proportionally to fit n tasks (each evaluation split keeps
// at least one task when n allows); s is returned unchanged when n suffices.
func (s Sizes) Scaled(n int) Sizes {
	if n >= s.Total() || s.Total() == 0 {
		return s
	}
	f := float64(n) / float64(s.Total())
	out := Sizes{Val: int(float64(s.Val) * f), Audit: int(float64(s.Audit) * f), Test: int(float64(s.Test) * f)}
	for _, p := range []*int{&out.Val, &out.Audit, &out.Test} {
		if *p == 0 && n >= 4 {
			*p = 1
		}
	}
	out.Train = max(0, n-out.Val-out.Audit-out.Test)
	return out
}

// SplitTasks deals tasks into the four splits deterministically from seed:
// the tasks are shuffled by a PCG stream, then val, audit and test are taken
// first and train last, so that changing the train size never changes an
// evaluation split. Tasks with the same Problem text are kept only once, so
// the splits are disjoint in what a solver sees. When there are fewer tasks
// than sizes asks for, sizes are scaled down proportionally.
func SplitTasks(tasks []Task, seed uint64, sizes Sizes) (map[string][]Task, error) {
	seen := make(map[string]bool, len(tasks))
	uniq := make([]Task, 0, len(tasks))
	for _, t := range tasks {
		if seen[t.Problem] {
			continue
		}
		seen[t.Problem] = true
		uniq = append(uniq, t)
	}
	if len(uniq) == 0 {
		return nil, fmt.Errorf("data: no tasks to split")
	}
	sizes = sizes.Scaled(len(uniq))
	r := rand.New(rand.NewPCG(seed, 0x5eed5b1175))
	r.Shuffle(len(uniq), func(i, j int) { uniq[i], uniq[j] = uniq[j], uniq[i] })
	out := make(map[string][]Task, 4)
	at := 0
	for _, sp := range []struct {
		name string
		n    int
	}{{SplitVal, sizes.Val}, {SplitAudit, sizes.Audit}, {SplitTest, sizes.Test}, {SplitTrain, sizes.Train}} {
		n := min(sp.n, len(uniq)-at)
		out[sp.name] = uniq[at : at+n : at+n]
		at += n
	}
	return out, nil
}
