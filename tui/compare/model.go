// Package compare is the workbench's compare view: several runs' val and
// test curves over model calls overlaid, one stable colour and marker
// per run, their scores, and the rows of their configurations that
// differ. It is a standalone bubbletea component fed plain data (Data),
// so it needs no engine and does no I/O.
package compare

import (
	tea "github.com/charmbracelet/bubbletea"
)

// XY is one point of a curve: Y at X model calls.
type XY struct{ X, Y float64 }

// Run is one run's side of the view.
type Run struct {
	ID string
	// Val and Test are the curves (val mean@k and test mean@k over model
	// calls), in order of calls.
	Val, Test []XY
	// Scores is the run's one-line score summary for the legend
	// ("best val 0.41 [0.33, 0.49] · test 0.22 [0.16, 0.29]").
	Scores string
}

// Row is one configuration key whose values differ, a value per run.
type Row struct {
	Key    string
	Values []string
}

// Data is what the view shows.
type Data struct {
	Runs []Run
	Diff []Row
	// Notes are lines under the diff (paired differences, ledgers).
	Notes []string
}

// Model is the compare view.
type Model struct {
	data          Data
	width, height int
	// split is the curve shown when only one chart fits: "val" or "test".
	split string
	// scroll is the first diff row shown.
	scroll int
	help   bool
}

// New returns the view of d.
func New(d Data) *Model { return &Model{data: d, split: "val"} }

func (m *Model) Init() tea.Cmd { return nil }

// Update handles the view's keys: tab switches the curve (when one chart
// fits), j/k and the arrows scroll the configuration diff, ? the keys,
// q quits.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		switch msg.String() {
		case "q", "ctrl+c", "esc":
			return m, tea.Quit
		case "tab", "v", "t":
			if m.split == "val" {
				m.split = "test"
			} else {
				m.split = "val"
			}
		case "j", "down":
			m.scroll = min(m.scroll+1, max(0, len(m.data.Diff)-1))
		case "k", "up":
			m.scroll = max(0, m.scroll-1)
		case "?":
			m.help = !m.help
		}
	}
	return m, nil
}
