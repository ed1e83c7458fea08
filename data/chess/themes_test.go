package chess

import (
	"slices"
	"strings"
	"testing"

	"whale/data"
)

// allTasks gathers every split of a domain.
func allTasks(t *testing.T, d data.Domain) []data.Task {
	t.Helper()
	var out []data.Task
	for _, sp := range data.Splits {
		ts, err := d.Tasks(sp)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ts...)
	}
	return out
}

// The theme filter keeps exactly the puzzles carrying one of the themes
// asked for, counts them per theme, and their gold lines still replay.
func TestImportLichessThemeFilter(t *testing.T) {
	all, _, err := ImportLichess(sampleCSV, data.ImportOptions{Seed: 1, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, tk := range allTasks(t, all) {
		th := Themes(tk)
		if slices.Contains(th, "mateIn1") || slices.Contains(th, "fork") {
			want++
		}
	}
	if want < 2 || want == len(allTasks(t, all)) {
		t.Fatalf("the sample has %d puzzles with mateIn1 or fork of %d: the test needs some of each kind", want, len(allTasks(t, all)))
	}
	d, _, err := ImportLichess(sampleCSV, data.ImportOptions{Seed: 1, SkipBad: true, Themes: []string{"mateIn1", "fork"}})
	if err != nil {
		t.Fatal(err)
	}
	kept := allTasks(t, d)
	if len(kept) != want {
		t.Fatalf("kept %d puzzles, want %d", len(kept), want)
	}
	for _, tk := range kept {
		th := Themes(tk)
		if !slices.Contains(th, "mateIn1") && !slices.Contains(th, "fork") {
			t.Errorf("%s kept with themes %v", tk.ID, th)
		}
		if r := replayGold(t, d, tk); r != 1 {
			t.Errorf("%s: gold replay reward %v", tk.ID, r)
		}
	}
	counts, err := ThemeCounts(d, []string{"mateIn1", "fork", "mateIn2"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range counts {
		got[c.Theme] = c.Tasks
	}
	if got["mateIn1"]+got["fork"] != want || got["mateIn1"] == 0 || got["fork"] == 0 || got["mateIn2"] != 0 {
		t.Errorf("counts %v, want mateIn1 and fork summing to %d and no mateIn2", counts, want)
	}
}

func TestImportLichessThemeFilterErrors(t *testing.T) {
	_, _, err := ImportLichess(sampleCSV, data.ImportOptions{SkipBad: true, Themes: []string{"mate In1"}})
	if err == nil || !strings.Contains(err.Error(), "mate In1") || !strings.Contains(err.Error(), "entry 1") {
		t.Errorf("bad theme name: %v", err)
	}
	_, _, err = ImportLichess(sampleCSV, data.ImportOptions{SkipBad: true, Themes: []string{"smotheredMate"}})
	if err == nil || !strings.Contains(err.Error(), "no usable puzzles with the themes smotheredMate") {
		t.Errorf("no match: %v", err)
	}
}

// Generated puzzles carry their themes: the mates of Generate their mate
// theme; the built-in ladder's every task its kind's, matching its mate
// distance.
func TestGeneratedThemes(t *testing.T) {
	mates, err := Generate(3, data.Sizes{Train: 2, Val: 2, Audit: 2, Test: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range mates[data.SplitTest] {
		if th := Themes(tk); !slices.Equal(th, []string{"mate", "mateIn" + tk.Hidden[HiddenMate]}) {
			t.Errorf("%s: themes %v", tk.ID, th)
		}
	}
	d, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := d.Tasks(data.SplitTest)
	want := map[string][]string{
		"0": {"hangingPiece", "oneMove"},
		"1": {"mate", "mateIn1", "oneMove"},
		"2": {"mate", "mateIn2", "short"},
	}
	for _, tk := range ts {
		if th := Themes(tk); !slices.Equal(th, want[tk.Hidden[HiddenMate]]) {
			t.Errorf("%s: themes %v", tk.ID, th)
		}
	}
}
