package tui

import "github.com/charmbracelet/lipgloss"

// All styles of the workbench.
var (
	stTitle     = lipgloss.NewStyle().Bold(true).Foreground(colAccent)
	stTabActive = lipgloss.NewStyle().Bold(true).Foreground(colAccent).Underline(true)
	stTab       = lipgloss.NewStyle().Foreground(colMuted)
	stMuted     = lipgloss.NewStyle().Foreground(colMuted)
	stWeights   = lipgloss.NewStyle().Foreground(colWeights)
	stHarness   = lipgloss.NewStyle().Foreground(colHarness)
	stError     = lipgloss.NewStyle().Bold(true).Foreground(colError)
	stGood      = lipgloss.NewStyle().Foreground(colGood)
	stSelected  = lipgloss.NewStyle().Bold(true).Background(colSelected)
	stHeader    = lipgloss.NewStyle().Bold(true)
	stConfirm   = lipgloss.NewStyle().Bold(true).Foreground(colHarness)
	// The charts' backgrounds are the timeline's two phase colours, so a
	// bar reads as "this phase made this change".
	stChartWeights = lipgloss.NewStyle().Background(colWeights).Foreground(colChartInk)
	stChartHarness = lipgloss.NewStyle().Background(colHarness).Foreground(colChartInk)
)
