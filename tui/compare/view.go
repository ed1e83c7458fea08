package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/NimbleMarkets/ntcharts/canvas"
	"github.com/NimbleMarkets/ntcharts/canvas/runes"
	"github.com/NimbleMarkets/ntcharts/linechart"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// palette gives run i its colour; markers its point rune, so runs stay
// apart without colour too.
var (
	palette = []lipgloss.Color{"39", "208", "170", "76", "220", "196", "45", "141"}
	markers = []rune{'●', '■', '▲', '◆', '★', '✚', '○', '□'}
	title   = lipgloss.NewStyle().Bold(true)
	dim     = lipgloss.NewStyle().Faint(true)
)

func runStyle(i int) lipgloss.Style {
	return lipgloss.NewStyle().Foreground(palette[i%len(palette)])
}

// View draws the header, the chart(s), the legend and the diff, filling
// the window exactly.
func (m *Model) View() string {
	w, h := m.width, m.height
	if w < 20 || h < 8 {
		return fit("compare: window too small", w, h)
	}
	if m.help {
		return fit(strings.Join([]string{title.Render("compare — keys"), "",
			"  tab  switch the chart between val and test (when one fits)",
			"  j/k  scroll the configuration differences",
			"  ?    this help", "  q    quit"}, "\n"), w, h)
	}
	var b []string
	b = append(b, truncate(title.Render(fmt.Sprintf("compare %d runs", len(m.data.Runs)))+dim.Render(" · x: model calls · tab val/test · j/k diff · ? keys · q quit"), w))
	legend := m.legend(w)
	need := 1 + max(1, len(m.data.Diff)) + len(m.data.Notes)
	diffH := max(3, min(need, (h-1-len(legend))*2/5))
	chartH := h - 1 - len(legend) - diffH
	if chartH < 5 {
		chartH, diffH = max(3, h-1-len(legend)-3), 3
	}
	if w >= 120 {
		cw := (w - 1) / 2
		left := m.chart("val", cw, chartH)
		right := m.chart("test", w-1-cw, chartH)
		b = append(b, strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, left, " ", right), "\n")...)
	} else {
		b = append(b, strings.Split(m.chart(m.split, w, chartH), "\n")...)
	}
	b = append(b, legend...)
	b = append(b, m.diff(w, diffH)...)
	return fit(strings.Join(b, "\n"), w, h)
}

// chart draws one split's curves of every run, overlaid, in w×h (the
// first line its title).
func (m *Model) chart(split string, w, h int) string {
	curve := func(r Run) []XY {
		if split == "test" {
			return r.Test
		}
		return r.Val
	}
	minX, maxX, maxY := math.Inf(1), math.Inf(-1), 0.0
	n := 0
	for _, r := range m.data.Runs {
		for _, p := range curve(r) {
			minX, maxX, maxY = math.Min(minX, p.X), math.Max(maxX, p.X), math.Max(maxY, p.Y)
			n++
		}
	}
	head := title.Render(split+" mean@k") + dim.Render(" over model calls")
	if n == 0 {
		return fit(head+"\n"+dim.Render("  no "+split+" measurement yet"), w, h)
	}
	if maxX <= minX {
		maxX = minX + 1
	}
	// Scores live in [0, 1]; a little headroom over the best keeps the
	// top curve off the frame.
	maxY = math.Min(1, math.Ceil((maxY+0.05)*10)/10)
	lc := linechart.New(w, h-1, minX, maxX, 0, maxY,
		linechart.WithXYSteps(max(8, (w-6)/4), 2),
		linechart.WithXLabelFormatter(func(_ int, v float64) string { return fmt.Sprintf("%.0f", v) }),
		linechart.WithYLabelFormatter(func(_ int, v float64) string { return fmt.Sprintf("%.2f", v) }))
	lc.DrawXYAxisAndLabel()
	for i, r := range m.data.Runs {
		pts := curve(r)
		st := runStyle(i)
		for j := 1; j < len(pts); j++ {
			lc.DrawLineWithStyle(canvas.Float64Point{X: pts[j-1].X, Y: pts[j-1].Y}, canvas.Float64Point{X: pts[j].X, Y: pts[j].Y}, runes.ThinLineStyle, st)
		}
	}
	// Markers last, so a run's points show over the others' lines.
	for i, r := range m.data.Runs {
		for _, p := range curve(r) {
			lc.DrawRuneWithStyle(canvas.Float64Point{X: p.X, Y: p.Y}, markers[i%len(markers)], runStyle(i))
		}
	}
	return fit(head+"\n"+lc.View(), w, h)
}

// legend is a line per run: its marker and id in its colour, its scores.
func (m *Model) legend(w int) []string {
	var out []string
	for i, r := range m.data.Runs {
		mark := runStyle(i).Render(string(markers[i%len(markers)]) + " " + r.ID)
		out = append(out, truncate(mark+"  "+r.Scores, w))
	}
	return out
}

// diff is the configuration rows that differ, scrolled, in h lines, and
// the notes after them.
func (m *Model) diff(w, h int) []string {
	rows := m.data.Diff
	lines := []string{title.Render(fmt.Sprintf("config differences (%d)", len(rows)))}
	if len(rows) == 0 {
		lines = append(lines, dim.Render("  the configurations are the same"))
	}
	keyW := 0
	for _, r := range rows {
		keyW = max(keyW, len(r.Key))
	}
	keyW = min(keyW, w/3)
	colW := 0
	if n := len(m.data.Runs); n > 0 {
		colW = max(4, (w-keyW-2)/n-1)
	}
	var body []string
	for _, r := range rows[min(m.scroll, len(rows)):] {
		line := "  " + pad(r.Key, keyW)
		for i, v := range r.Values {
			line += " " + runStyle(i).Render(pad(v, colW))
		}
		body = append(body, truncate(line, w))
	}
	for _, n := range m.data.Notes {
		body = append(body, truncate(dim.Render(n), w))
	}
	room := h - 1
	if len(rows) == 0 {
		room--
	}
	if len(body) > room && room > 0 {
		more := len(body) - room + 1
		body = append(body[:room-1], dim.Render(fmt.Sprintf("  … %d more (j/k)", more)))
	}
	return append(lines, body[:min(len(body), max(0, room))]...)
}

// pad cuts or pads s to exactly n cells.
func pad(s string, n int) string {
	if lipgloss.Width(s) > n {
		return ansi.Truncate(s, n, "…")
	}
	return s + strings.Repeat(" ", n-lipgloss.Width(s))
}

func truncate(s string, w int) string { return ansi.Truncate(s, w, "") }

// fit makes s exactly h lines of at most w cells.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i := range lines {
		lines[i] = truncate(lines[i], w)
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}
