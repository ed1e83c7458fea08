package chess

import (
	"reflect"
	"slices"
	"testing"

	"whale/data"
)

// The ladder set: each split holds its kinds in their shares, every
// puzzle carries its themes and replays to reward 1 with its gold line,
// the splits are disjoint and the same seed gives the same set.
func TestGenerateLadder(t *testing.T) {
	sizes := data.Sizes{Train: 10, Val: 5, Audit: 4, Test: 6}
	a, err := GenerateLadder(7, sizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDomain(a)
	if err != nil {
		t.Fatal(err)
	}
	checkLadder(t, d, a, sizes, 1)
	b, err := GenerateLadder(7, sizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the same seed gave another ladder set")
	}
}

// checkLadder asserts that splits (d's) hold LadderKinds in their shares
// for sizes, no position twice, and that every step-th task replays to
// reward 1 with its gold line while a hanging piece's first other legal
// move scores 0.
func checkLadder(t *testing.T, d data.Domain, splits map[string][]data.Task, sizes data.Sizes, step int) {
	t.Helper()
	seen := map[string]bool{}
	for _, sp := range data.Splits {
		want := ladderCounts(map[string]int{data.SplitTrain: sizes.Train, data.SplitVal: sizes.Val, data.SplitAudit: sizes.Audit, data.SplitTest: sizes.Test}[sp])
		var got [3]int
		for i, tk := range splits[sp] {
			if err := ValidateTask(tk); err != nil {
				t.Fatal(err)
			}
			p, _ := ParseFEN(tk.Hidden[HiddenStartFEN])
			if seen[p.key()] {
				t.Errorf("%s: position used twice", tk.ID)
			}
			seen[p.key()] = true
			th := Themes(tk)
			k := slices.IndexFunc(LadderKinds, func(kind struct {
				Name   string
				Themes string
				Share  float64
			}) bool {
				return slices.Contains(th, kind.Name)
			})
			if k < 0 {
				t.Fatalf("%s: themes %v name no ladder kind", tk.ID, th)
			}
			got[k]++
			if i%step != 0 {
				continue
			}
			if r := replayGold(t, d, tk); r != 1 {
				t.Errorf("%s (%s): gold replay %v", tk.ID, LadderKinds[k].Name, r)
			}
			if k == 1 {
				// The only winning move is the capture: a quiet move fails.
				for _, m := range p.LegalUCI() {
					if m == tk.Answer {
						continue
					}
					if res := NewEpisode(tk).Step(data.Action{Kind: data.ActMove, Text: m}); res.Reward != 0 {
						t.Errorf("%s: %s also scores", tk.ID, m)
					}
					break
				}
			}
		}
		if got != want {
			t.Errorf("split %s: kinds %v, want %v", sp, got, want)
		}
	}
}

func TestHangingCapture(t *testing.T) {
	cases := []struct {
		fen, want string
	}{
		// The black queen on d4 stands free for the rook.
		{"k7/8/8/8/3q4/8/7K/3R4 w - - 0 1", "d1d4"},
		// Defended by a pawn: the rook would be lost for the queen, still
		// a gain of 4.
		{"k7/8/4p3/3q4/8/8/7K/3R4 w - - 0 1", "d1d5"},
		// Only a pawn to take: too little.
		{"k7/8/8/8/3p4/8/7K/3R4 w - - 0 1", ""},
	}
	for _, c := range cases {
		p, err := ParseFEN(c.fen)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := hangingCapture(p)
		got := ""
		if ok {
			got = m.UCI()
		}
		if got != c.want {
			t.Errorf("%s: hanging capture %q, want %q", c.fen, got, c.want)
		}
	}
}
