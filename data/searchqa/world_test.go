package searchqa

import "testing"

// TestWorldShape checks what makes retrieval non-trivial: unique titles,
// near-duplicate names (one letter apart) and distractor documents.
func TestWorldShape(t *testing.T) {
	w := newWorld(1)
	docs := w.corpus()
	titles := map[string]bool{}
	byLen := map[int][]string{}
	for _, d := range docs {
		if titles[d.Title] {
			t.Fatalf("title %q twice", d.Title)
		}
		titles[d.Title] = true
		byLen[len(d.Title)] = append(byLen[len(d.Title)], d.Title)
	}
	near := 0
	for _, group := range byLen {
		for i, a := range group {
			for _, b := range group[i+1:] {
				diff := 0
				for k := range a {
					if a[k] != b[k] {
						diff++
					}
				}
				if diff == 1 {
					near++
				}
			}
		}
	}
	entities := nCountries + nCities + nRivers + nPeople + nCompanies
	if near < entities/20 {
		t.Fatalf("%d near-duplicate title pairs among %d entities, want at least %d", near, entities, entities/20)
	}
	if len(docs) != entities+nEvents {
		t.Fatalf("%d documents, want %d entities and %d distractors", len(docs), entities, nEvents)
	}
	t.Logf("%d documents, %d near-duplicate title pairs", len(docs), near)
}
