package search

import (
	"sort"
	"strings"

	"whale/harnesses"
)

// GridCandidate is one candidate of a knob grid: src with Knob set to
// Choice, or, for the combined candidate, Knob "combined" and Choice the
// "knob=choice, …" list it sets.
type GridCandidate struct {
	Knob, Choice, Source string
}

// GridResult is a grid candidate with its score.
type GridResult struct {
	GridCandidate
	Score float64
}

// KnobGrid scores every one-knob change of src's SEARCH_SPACE, then, when
// two or more knobs have a choice that beat base (src's own score), the
// candidate that sets each such knob to its best choice. score is called
// once per candidate, in the space's order; results come best first (ties
// in that order). It is what `whale eval --grid` runs; the engine's
// search proposers explore the same space without scoring all of it.
func KnobGrid(src string, base float64, score func(GridCandidate) (float64, error)) ([]GridResult, error) {
	space, err := harnesses.SpaceOf(src)
	if err != nil {
		return nil, err
	}
	var out []GridResult
	best := map[string]GridResult{}
	for _, d := range space {
		for _, choice := range d.Choices {
			if choice == d.Current {
				continue
			}
			cand, err := harnesses.Mutate(src, d.Knob, choice)
			if err != nil {
				return nil, err
			}
			c := GridCandidate{Knob: d.Knob, Choice: choice, Source: cand}
			s, err := score(c)
			if err != nil {
				return nil, err
			}
			r := GridResult{GridCandidate: c, Score: s}
			out = append(out, r)
			if b, ok := best[d.Knob]; s > base && (!ok || s > b.Score) {
				best[d.Knob] = r
			}
		}
	}
	if len(best) > 1 {
		c, err := combined(src, best)
		if err != nil {
			return nil, err
		}
		s, err := score(c)
		if err != nil {
			return nil, err
		}
		out = append(out, GridResult{GridCandidate: c, Score: s})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out, nil
}

// combined sets every knob of best to its choice, knobs in name order.
func combined(src string, best map[string]GridResult) (GridCandidate, error) {
	knobs := make([]string, 0, len(best))
	for k := range best {
		knobs = append(knobs, k)
	}
	sort.Strings(knobs)
	var parts []string
	for _, k := range knobs {
		var err error
		if src, err = harnesses.Mutate(src, k, best[k].Choice); err != nil {
			return GridCandidate{}, err
		}
		parts = append(parts, k+"="+best[k].Choice)
	}
	return GridCandidate{Knob: "combined", Choice: strings.Join(parts, ", "), Source: src}, nil
}
