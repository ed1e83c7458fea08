package tui

import "github.com/charmbracelet/lipgloss"

// All colours of the workbench; styles.go builds on these alone.
var (
	colWeights  = lipgloss.AdaptiveColor{Light: "#1f6feb", Dark: "#58a6ff"}
	colHarness  = lipgloss.AdaptiveColor{Light: "#bf8700", Dark: "#e3b341"}
	colAccent   = lipgloss.AdaptiveColor{Light: "#8250df", Dark: "#bc8cff"}
	colMuted    = lipgloss.AdaptiveColor{Light: "#6e7781", Dark: "#8b949e"}
	colError    = lipgloss.AdaptiveColor{Light: "#cf222e", Dark: "#ff7b72"}
	colGood     = lipgloss.AdaptiveColor{Light: "#1a7f37", Dark: "#3fb950"}
	colSelected = lipgloss.AdaptiveColor{Light: "#ddf4ff", Dark: "#1f2937"}
	colChartInk = lipgloss.AdaptiveColor{Light: "#0d1117", Dark: "#0d1117"}
)
