package search

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// A proposal that does not load is refused and recorded, and the search
// goes on: no iteration fails, the refused harness is never scored,
// accepted or proposed again, and the progress line says why.
func TestSearchRefusesCandidatesThatDoNotLoadAndGoesOn(t *testing.T) {
	a, s, _ := newSearch(t)
	s.Check = func(src string) error {
		if strings.Contains(src, "parse_action = _parse_bare") {
			return errors.New("cand.star:7:12: range: MAX_TURNS = 99 is out of range; allowed 1..6")
		}
		return nil
	}
	val := tasks(64)
	if _, err := s.Restart(context.Background(), a, "w", val, 1); err != nil {
		t.Fatal(err)
	}
	refused := map[string]int{}
	text := ""
	for it := 2; it < 12; it++ {
		r, err := s.Iterate(context.Background(), a, val, rand.New(rand.NewPCG(7, uint64(it))), it)
		if err != nil {
			t.Fatalf("iteration %d: %v", it, err)
		}
		for _, x := range r.Invalid {
			refused[x.Hash]++
			if !strings.Contains(x.Reason, "cand.star:7:12") {
				t.Fatalf("refusal reason %q lacks the loader's file:line:col", x.Reason)
			}
			text = r.StarvedText()
		}
	}
	if len(refused) == 0 {
		t.Fatal("no proposal was refused: the test's check never fired")
	}
	for h, n := range refused {
		e := a.Entries[h]
		if n != 1 || e.Status != StatusInvalid || e.Scored != 0 || !strings.Contains(e.Invalid, "out of range") {
			t.Fatalf("refused %s: proposed %d times, status %s, scored %d, reason %q", short(h), n, e.Status, e.Scored, e.Invalid)
		}
		if a.Incumbent == h {
			t.Fatal("a refused harness became the incumbent")
		}
	}
	if !strings.Contains(text, "refused (they do not load)") || !strings.Contains(text, "MAX_TURNS = 99") {
		t.Fatalf("progress text %q does not say what was refused and why", text)
	}
}
