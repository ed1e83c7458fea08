package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"

	"whale/harnesses"
)

// Candidate is a proposed harness: full source plus where it came from.
type Candidate struct {
	Source    string
	Hash      string
	Parent    string
	Mechanism string
	Proposer  string
}

// Proposer proposes up to n new candidates from the archive.
type Proposer interface {
	Name() string
	Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error)
}

// FilteringProposer is a Proposer that can pass over candidates keep
// refuses and draw others in their place (at most maxPassedOver of them),
// returning up to n kept ones. With a keep that accepts everything it
// proposes exactly what Propose does, drawing the same random numbers.
type FilteringProposer interface {
	Proposer
	ProposeWhere(ctx context.Context, a *Archive, rng *rand.Rand, n int, keep func(Candidate) bool) ([]Candidate, error)
}

// maxPassedOver bounds the candidates one ProposeWhere call passes over.
const maxPassedOver = 64

// Mutation changes one mechanism of a parent per candidate: one knob or
// fragment of its SEARCH_SPACE, never a frozen knob, never yielding a
// pruned or already archived harness. The parent is the incumbent, or,
// when Parents is set, any of them (a population, as in Fast-Slow
// Training).
type Mutation struct {
	Parents []string
}

func (Mutation) Name() string { return "mutation" }

func (m Mutation) Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error) {
	parents := m.Parents
	if len(parents) == 0 {
		parents = []string{a.Incumbent}
	}
	var all []Candidate
	seen := map[string]bool{}
	for _, h := range parents {
		p, ok := a.Entries[h]
		if !ok {
			return nil, fmt.Errorf("search: mutation parent %s is not in the archive", short(h))
		}
		cs, err := singleChanges(p, a)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if !seen[c.Hash] {
				seen[c.Hash] = true
				all = append(all, c)
			}
		}
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return all[:min(n, len(all))], nil
}

// singleChanges lists every one-knob change of e, in knob then choice
// order, skipping frozen knobs and archived results.
func singleChanges(e *Entry, a *Archive) ([]Candidate, error) {
	space, err := harnesses.SpaceOf(e.Source)
	if err != nil {
		return nil, fmt.Errorf("search: incumbent %s: %w", short(e.Hash), err)
	}
	seen := map[string]bool{}
	var out []Candidate
	for _, d := range space {
		if a.Frozen[d.Knob] {
			continue
		}
		for _, c := range d.Choices {
			if c == d.Current {
				continue
			}
			src, err := harnesses.Mutate(e.Source, d.Knob, c)
			if err != nil {
				return nil, fmt.Errorf("search: mutate %s: %w", d.Knob, err)
			}
			h := harnesses.Hash(src)
			if a.known(h) || seen[h] {
				continue
			}
			seen[h] = true
			out = append(out, Candidate{Source: src, Hash: h, Parent: e.Hash, Mechanism: d.Knob + "=" + c, Proposer: "mutation"})
		}
	}
	return out, nil
}

// Grid walks the product of the choices of at most two knobs, starting
// from the incumbent at the time the grid was made, in order.
type Grid struct {
	Base  string // source the grid varies
	Knobs []string
}

func (g *Grid) Name() string { return "grid" }

func (g *Grid) Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error) {
	if len(g.Knobs) == 0 || len(g.Knobs) > 2 {
		return nil, fmt.Errorf("search: a grid varies one or two knobs, not %d", len(g.Knobs))
	}
	space, err := harnesses.SpaceOf(g.Base)
	if err != nil {
		return nil, fmt.Errorf("search: grid base: %w", err)
	}
	choices := make([][]string, len(g.Knobs))
	for i, k := range g.Knobs {
		for _, d := range space {
			if d.Knob == k {
				choices[i] = d.Choices
			}
		}
		if choices[i] == nil {
			return nil, fmt.Errorf("search: grid knob %q is not in SEARCH_SPACE", k)
		}
		if a.Frozen[k] {
			return nil, fmt.Errorf("search: grid knob %q is frozen", k)
		}
	}
	points := [][]string{{}}
	for _, cs := range choices {
		var next [][]string
		for _, p := range points {
			for _, c := range cs {
				next = append(next, append(append([]string(nil), p...), c))
			}
		}
		points = next
	}
	base := harnesses.Hash(g.Base)
	var out []Candidate
	for _, p := range points {
		src, mech := g.Base, ""
		for i, c := range p {
			if src, err = harnesses.Mutate(src, g.Knobs[i], c); err != nil {
				return nil, err
			}
			if mech != "" {
				mech += ","
			}
			mech += g.Knobs[i] + "=" + c
		}
		h := harnesses.Hash(src)
		if a.known(h) {
			continue
		}
		out = append(out, Candidate{Source: src, Hash: h, Parent: base, Mechanism: mech, Proposer: "grid"})
		if len(out) == n {
			break
		}
	}
	return out, nil
}

// sortCandidates orders candidates by hash (used where order must not
// depend on how they were produced).
func sortCandidates(cs []Candidate) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].Hash < cs[j].Hash })
}

// known reports whether a proposer should skip hash: it is pruned, or it
// was already scored under the current weights.
func (a *Archive) known(hash string) bool {
	e, ok := a.Entries[hash]
	return ok && (e.Status == StatusPruned || e.Status == StatusInvalid || e.Scored > 0)
}
