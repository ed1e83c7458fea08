package search

import (
	"strings"
	"testing"

	"whale/harnesses"
)

// KnobGrid scores every one-knob change once, combines the best beating
// choice of each knob that has one (two or more knobs), and returns the
// results best first.
func TestKnobGridScoresEveryChangeAndCombinesTheWinners(t *testing.T) {
	src := builtin(t)
	space, err := harnesses.SpaceOf(src)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, d := range space {
		want += len(d.Choices) - 1
	}
	if len(space) < 2 || want < 3 {
		t.Fatalf("h0's space has %d knobs, %d changes: too small for this test", len(space), want)
	}
	// The first two knobs' first non-current choices beat the base (0.5),
	// the second more than the first; everything else loses.
	winners := map[string]float64{}
	for i, d := range space[:2] {
		for _, c := range d.Choices {
			if c != d.Current {
				winners[d.Knob+"="+c] = 0.6 + 0.1*float64(i)
				break
			}
		}
	}
	seen := map[string]int{}
	res, err := KnobGrid(src, 0.5, func(c GridCandidate) (float64, error) {
		seen[c.Knob+"="+c.Choice]++
		if c.Knob == "combined" {
			return 0.9, nil
		}
		if s, ok := winners[c.Knob+"="+c.Choice]; ok {
			return s, nil
		}
		return 0.4, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != want+1 {
		t.Fatalf("%d results, want %d changes and the combined one", len(res), want)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s scored %d times", k, n)
		}
	}
	top := res[0]
	if top.Knob != "combined" || top.Score != 0.9 || strings.Count(top.Choice, "=") != 2 {
		t.Fatalf("best result %+v, want the combined candidate of the two winners", top.GridCandidate)
	}
	for _, part := range strings.Split(top.Choice, ", ") {
		if _, ok := winners[part]; !ok {
			t.Fatalf("combined sets %s, which did not win", part)
		}
	}
	if res[1].Score != 0.7 || res[2].Score != 0.6 || res[len(res)-1].Score != 0.4 {
		t.Fatalf("not best first: %v %v … %v", res[1].Score, res[2].Score, res[len(res)-1].Score)
	}
	// One winner is not combined with nothing.
	res, err = KnobGrid(src, 0.65, func(c GridCandidate) (float64, error) { return winners[c.Knob+"="+c.Choice], nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != want || res[0].Knob == "combined" {
		t.Fatalf("one knob beating the base: %d results, best %+v", len(res), res[0].GridCandidate)
	}
}
