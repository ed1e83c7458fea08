package compare

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"
)

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii)
	os.Exit(m.Run())
}

// updating reports -update (defined by x/exp/golden, which teatest brings).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// threeRuns is a weight-only, a harness-only and a WHALE run of one
// budget, as whale compare --tui builds them.
func threeRuns() Data {
	return Data{
		Runs: []Run{
			{ID: "math-weight-only-s1", Val: []XY{{0, 0.06}, {640, 0.12}, {1280, 0.19}, {1920, 0.22}, {2560, 0.25}},
				Test: []XY{{0, 0.08}, {1280, 0.15}, {2560, 0.2}}, Scores: "best val 0.250 [0.180, 0.320] · test mean@8 0.197 [0.140, 0.260]"},
			{ID: "math-harness-only-s1", Val: []XY{{0, 0.06}, {700, 0.09}, {1400, 0.1}, {2100, 0.16}, {2560, 0.16}},
				Test: []XY{{0, 0.08}, {1400, 0.1}, {2560, 0.14}}, Scores: "best val 0.160 [0.100, 0.220] · test mean@8 0.140 [0.090, 0.200]"},
			{ID: "math-whale-fixed-s1", Val: []XY{{0, 0.06}, {500, 0.1}, {1100, 0.17}, {1700, 0.2}, {2560, 0.31}},
				Test: []XY{{0, 0.08}, {1100, 0.13}, {2560, 0.24}}, Scores: "best val 0.310 [0.240, 0.380] · test mean@8 0.236 [0.170, 0.300]"},
		},
		Diff: []Row{
			{Key: "condition", Values: []string{"weight-only", "harness-only", "-"}},
			{Key: "e", Values: []string{"0.2", "0.2", "0.25"}},
			{Key: "harness_calls", Values: []string{"640", "640", "512"}},
			{Key: "lr", Values: []string{"1e-05", "1e-05", "3e-05"}},
			{Key: "seed", Values: []string{"1", "1", "1"}},
		},
		Notes: []string{"paired test difference math-whale-fixed-s1 − math-harness-only-s1: +0.094 [+0.031, +0.156] over 64 tasks",
			"model calls (train/search/eval): 2560/0/1024 · 0/2560/1024 · 1408/1152/1024"},
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run go test ./tui/compare -update)", path, err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestCompareGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []tea.KeyType
		w, h int
	}{
		{"compare_80x24", nil, 80, 24},
		{"compare_test_80x24", []tea.KeyType{tea.KeyTab}, 80, 24},
		{"compare_160x48", nil, 160, 48},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := teatest.NewTestModel(t, New(threeRuns()), teatest.WithInitialTermSize(tc.w, tc.h))
			for _, k := range tc.keys {
				tm.Send(tea.KeyMsg{Type: k})
			}
			if err := tm.Quit(); err != nil {
				t.Fatal(err)
			}
			v := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).View()
			if n := strings.Count(v, "\n") + 1; n != tc.h {
				t.Errorf("view has %d lines, want %d", n, tc.h)
			}
			for i, l := range strings.Split(v, "\n") {
				if lw := lipgloss.Width(l); lw > tc.w {
					t.Errorf("line %d is %d wide, want ≤ %d: %q", i, lw, tc.w, l)
				}
			}
			golden(t, tc.name, v)
		})
	}
}

// TestEveryRunHasItsMarkerAndRow checks what the goldens hold in a way
// that fails on its own: each run's marker is drawn at its points (the
// three runs start at the same two points, where the last run's marker
// is on top), and its id and its diff values are shown.
func TestEveryRunHasItsMarkerAndRow(t *testing.T) {
	m := New(threeRuns())
	m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	v := m.View()
	for i, r := range threeRuns().Runs {
		want := len(r.Val) + len(r.Test)
		if i < 2 {
			want -= 2
		}
		if got := strings.Count(v, string(markers[i])) - 1; got < want { // one in the legend
			t.Errorf("run %s: %d markers %c on the charts, want one per point not shared (%d)", r.ID, got, markers[i], want)
		}
		if !strings.Contains(v, r.ID) {
			t.Errorf("run %s missing from the legend", r.ID)
		}
	}
	for _, want := range []string{"harness-only", "3e-05", "paired test difference"} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q", want)
		}
	}
	m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'j'}})
	if strings.Contains(m.View(), "  condition ") {
		t.Errorf("j did not scroll the diff past its first row")
	}
}

func TestQQuits(t *testing.T) {
	tm := teatest.NewTestModel(t, New(threeRuns()), teatest.WithInitialTermSize(80, 24))
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{'q'}})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
