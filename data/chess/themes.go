package chess

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"whale/data"
)

// Themes say what kind of puzzle a task is, in lichess's words (mateIn1,
// hangingPiece, fork, ...). Imported lichess puzzles carry their own in
// Hidden[HiddenThemes]; a generated puzzle's themes follow from its mate
// depth ("mate mateIn1", "mate mateIn2").

// Themes returns a task's themes.
func Themes(t data.Task) []string {
	if th, ok := t.Hidden[HiddenThemes]; ok {
		return strings.Fields(th)
	}
	if m := t.Hidden[HiddenMate]; m != "" && m != "0" {
		return []string{"mate", "mateIn" + m}
	}
	return nil
}

// themeFilter checks a theme list (each a word of letters and digits, as
// lichess writes them) and returns it as a set; nil for an empty list.
func themeFilter(themes []string) (map[string]bool, error) {
	if len(themes) == 0 {
		return nil, nil
	}
	set := map[string]bool{}
	for i, th := range themes {
		th = strings.TrimSpace(th)
		if th == "" || strings.IndexFunc(th, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) >= 0 {
			return nil, fmt.Errorf("themes: entry %d %q: want a lichess theme name of letters and digits, like mateIn1", i+1, th)
		}
		set[th] = true
	}
	return set, nil
}

// hasTheme reports whether t carries one of the wanted themes.
func hasTheme(t data.Task, want map[string]bool) bool {
	for _, th := range Themes(t) {
		if want[th] {
			return true
		}
	}
	return false
}

// ThemeCount is how many tasks of a domain carry one theme.
type ThemeCount struct {
	Theme string `json:"theme"`
	Tasks int    `json:"tasks"`
}

// ThemeCounts counts the tasks of every split by theme (a task counts once
// under each of its themes), most common first, then by name. With only,
// it counts those themes alone, in the order given, zeros included.
func ThemeCounts(d data.Domain, only []string) ([]ThemeCount, error) {
	counts := map[string]int{}
	for _, sp := range data.Splits {
		ts, err := d.Tasks(sp)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			for _, th := range Themes(t) {
				counts[th]++
			}
		}
	}
	var out []ThemeCount
	if len(only) > 0 {
		for _, th := range only {
			out = append(out, ThemeCount{th, counts[th]})
		}
		return out, nil
	}
	for _, th := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, ThemeCount{th, counts[th]})
	}
	slices.SortStableFunc(out, func(a, b ThemeCount) int { return b.Tasks - a.Tasks })
	return out, nil
}
