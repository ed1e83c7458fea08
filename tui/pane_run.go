package tui

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"whale/core/engine"
)

// runPane is the Run pane: the run's header, its phase timeline, val and
// reward charts on the timeline's columns, patience and the last step's
// stats; from wideFrom columns, the leaderboard and the latest events
// beside them. It has no state or keys of its own: it draws m.run.
type runPane struct{}

func (runPane) update(*Model, tea.KeyMsg) tea.Cmd { return nil }

func (p runPane) view(m *Model, w, h int) []string {
	if w < wideFrom {
		return p.main(m, w, h)
	}
	lw := w - max(sideWidth, w*2/5) - 3
	return sideBySide(fit(p.main(m, lw, h), h), p.side(m, w-lw-3, h), lw)
}

// main draws the header, the phase timeline, the charts, patience and
// the step stats in w×h; the charts take the height the rest leaves.
func (runPane) main(m *Model, w, h int) []string {
	r, o := &m.run, &m.opt
	of := "∞"
	if o.Budget > 0 {
		of = fmt.Sprint(o.Budget)
	}
	rounds := fmt.Sprint(r.round)
	if o.Rounds > 0 {
		rounds += fmt.Sprintf("/%d", o.Rounds)
	}
	elapsed := m.now.Sub(m.started).Truncate(time.Second)
	// The header wraps at " · " rather than lose its last fields.
	top := wrapParts([]string{stHeader.Render("run " + o.RunID), stMuted.Render(o.Domain), stMuted.Render(o.ModelDesc),
		stMuted.Render(o.Schedule), stMuted.Render("preset " + o.Preset)}, w)
	calls := fmt.Sprintf("model calls %d/%s", r.rollouts, of)
	if o.Budget > 0 {
		calls += fmt.Sprintf(" (%d left)", max(0, o.Budget-r.rollouts))
	}
	head := []string{calls, fmt.Sprintf("rollouts %d", r.episodes), "round " + rounds, fmt.Sprintf("step %d", r.step), fmt.Sprintf("iteration %d", r.iter)}
	if o.Status == "" {
		// How long this workbench has watched the run; a stored run
		// that nothing runs (opened with a Status) has no such time.
		head = append(head, "elapsed "+elapsed.String())
	}
	top = append(top, wrapParts(head, w)...)
	top = append(top, m.progressLines(w)...)
	if g := r.origin; g != nil {
		top = append(top, stMuted.Render(fmt.Sprintf("from checkpoint %s (run %s, round %d %s phase)", g.Checkpoint, g.Run, g.Round, g.Phase)))
	}
	ax := r.axis(w-2, o.Budget)
	top = append(top, "")
	top = append(top, r.timeline(ax)...)
	top = append(top, "")

	bottom := append([]string{""}, r.patienceLines(w)...)
	if r.lastStep != nil {
		s := r.lastStep.Stats
		rej := make([]string, 0, len(s.Rejected))
		for _, k := range sortedKeys(s.Rejected) {
			rej = append(rej, fmt.Sprintf("%s %d", k, s.Rejected[k]))
		}
		bottom = append(bottom, "",
			fmt.Sprintf("step: kept %d/%d · trained %d · loss %.4f · grad %.3f · lr %.2g", s.Kept, s.Rollouts, s.Trained, s.Loss, s.GradNorm, s.LR),
			"rejected: "+strings.Join(rej, ", "))
	}
	if l := r.healthLine(); l != "" {
		bottom = append(bottom, l)
	}
	if r.dropped > 0 {
		bottom = append(bottom, stMuted.Render(fmt.Sprintf("(%d events skipped while the screen caught up; all are stored)", r.dropped)))
	}
	// Two charts, each a label line and rows; at least one row, at most
	// chartMaxRows, whatever the window leaves.
	rows := min(chartMaxRows, max(1, (h-len(top)-len(bottom))/2-1))
	out := append(top, r.valChart(ax, rows)...)
	out = append(out, r.rewardChart(ax, rows)...)
	return append(out, bottom...)
}

const chartMaxRows = 10

// healthLine is the weight phases' health: the last step's token entropy
// against the first's, and val pass@k − mean@k now against the start (both
// fall when training collapses the policy onto one answer).
func (r *runView) healthLine() string {
	var parts []string
	if e := r.entropies; len(e) > 0 {
		parts = append(parts, fmt.Sprintf("entropy %.2f nats (first step %.2f)", e[len(e)-1], e[0]))
	}
	if sp := r.spreads; len(sp) > 0 {
		parts = append(parts, fmt.Sprintf("val pass−mean %+.2f (start %+.2f)", sp[len(sp)-1], sp[0]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "health: " + strings.Join(parts, " · ")
}

// axis maps budgeted rollouts to the columns of the timeline and of the
// charts under it, so a column means the same stretch of the run in all
// three; kinds is the phase each column belongs to ("" past the cursor).
type axis struct {
	w, total int
	kinds    []engine.Phase
}

func (a axis) col(x int) int { return min(a.w-1, x*a.w/a.total) }

// span is the columns [c0, c1) that rollouts [from, to) cover, at least
// one.
func (a axis) span(from, to int) (int, int) {
	c0, c1 := a.col(from), a.col(max(from, to-1))+1
	return c0, max(c1, c0+1)
}

// axis spans the budget, or the rollouts spent where there is none or
// the run went past it.
func (r *runView) axis(w, budget int) axis {
	a := axis{w: max(10, w), total: max(1, r.rollouts)}
	if budget > 0 {
		a.total = max(a.total, budget)
	}
	a.kinds = make([]engine.Phase, a.w)
	for _, s := range r.segments {
		c0, c1 := a.span(s.start, r.segEnd(s))
		for x := c0; x < c1; x++ {
			a.kinds[x] = s.kind
		}
	}
	return a
}

func (r *runView) segEnd(s segment) int {
	if s.end < 0 {
		return r.rollouts
	}
	return s.end
}

// timeline draws phases as a band over the rollouts, weight phases as █ and
// harness phases as ▒ in two colours, with cycle numbers under the band and
// a cursor where the run is.
func (r *runView) timeline(a axis) []string {
	nums := []rune(strings.Repeat(" ", a.w))
	for _, s := range r.segments {
		if s.kind != engine.PhaseWeights {
			continue
		}
		c0, _ := a.span(s.start, r.segEnd(s))
		for i, c := range fmt.Sprint(s.round) {
			if c0+i < a.w {
				nums[c0+i] = c
			}
		}
	}
	band := make([]rune, a.w)
	for x, k := range a.kinds {
		switch k {
		case engine.PhaseWeights:
			band[x] = '█'
		case engine.PhaseHarness:
			band[x] = '▒'
		default:
			band[x] = '·'
		}
	}
	cursor := []rune(strings.Repeat(" ", a.w))
	cursor[a.col(r.rollouts)] = '▲'
	return []string{
		"timeline " + stWeights.Render("█ weights") + "  " + stHarness.Render("▒ harness") + stMuted.Render("  (cycle numbers below)"),
		" " + paint(band, a.kinds, stWeights, stHarness),
		" " + string(nums),
		" " + string(cursor),
	}
}

// paint renders cells in runs of the same phase, each run in its phase's
// style (one Render per run, not per cell: View runs at 10 Hz).
func paint(cells []rune, kinds []engine.Phase, weights, harness lipgloss.Style) string {
	var sb strings.Builder
	for x := 0; x < len(cells); {
		y := x + 1
		for y < len(cells) && kinds[y] == kinds[x] {
			y++
		}
		run := string(cells[x:y])
		switch kinds[x] {
		case engine.PhaseWeights:
			run = weights.Render(run)
		case engine.PhaseHarness:
			run = harness.Render(run)
		}
		sb.WriteString(run)
		x = y
	}
	return sb.String()
}

// valChart draws val mean@k over the timeline's columns: each ended phase
// at the level it reached, so a step between two phases is what the
// second one changed.
func (r *runView) valChart(a axis, rows int) []string {
	cols := make([]float64, a.w)
	for i := range cols {
		cols[i] = math.NaN()
	}
	var vs []float64
	if len(r.vals) > 0 {
		vs = append(vs, r.vals[0].mean) // before the first phase
	}
	for _, s := range r.segments {
		if !s.hasVal {
			continue
		}
		vs = append(vs, s.val)
		c0, c1 := a.span(s.start, s.end)
		for x := c0; x < c1; x++ {
			cols[x] = s.val
		}
	}
	label := "val mean@k"
	if r.valK > 0 {
		label = fmt.Sprintf("val mean@%d", r.valK)
	}
	if len(vs) > 0 {
		label = fmt.Sprintf("%-12s %.3f (start %.3f)", label, vs[len(vs)-1], vs[0])
	}
	return phaseChart(label, cols, vs, a.kinds, rows)
}

// rewardChart draws each weight step's mean training reward over the
// columns of the rollouts it spent (several steps in one column: their
// mean); harness phases are gaps on their own colour.
func (r *runView) rewardChart(a axis, rows int) []string {
	sum, n := make([]float64, a.w), make([]int, a.w)
	var vs []float64
	for _, p := range r.rewards {
		vs = append(vs, p.mean)
		c0, c1 := a.span(p.from, p.to)
		for x := c0; x < c1; x++ {
			sum[x] += p.mean
			n[x]++
		}
	}
	cols := make([]float64, a.w)
	for x := range cols {
		cols[x] = math.NaN()
		if n[x] > 0 {
			cols[x] = sum[x] / float64(n[x])
		}
	}
	label := "reward/step"
	if len(vs) > 0 {
		label = fmt.Sprintf("%-12s %.3f (step %d)", label, vs[len(vs)-1], len(vs))
	}
	return phaseChart(label, cols, vs, a.kinds, rows)
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// phaseChart is a label line with the range of vs, then rows of bars, one
// column per timeline column (NaN: no bar), each column on the background
// colour of its phase.
func phaseChart(label string, cols, vs []float64, kinds []engine.Phase, rows int) []string {
	if len(vs) == 0 {
		return append([]string{fmt.Sprintf("%-12s ", label) + stMuted.Render("—")}, make([]string, rows)...)
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	out := []string{fmt.Sprintf("%s [%.2f..%.2f]", label, lo, hi)}
	levels := rows * 8
	fill := make([]int, len(cols)) // in eighths of a row
	for x, v := range cols {
		switch {
		case math.IsNaN(v):
		case hi > lo:
			fill[x] = 1 + int(math.Round((v-lo)/(hi-lo)*float64(levels-1)))
		default:
			// One value has no range to scale by: draw it on [0, 1],
			// where val mean@k and rewards live, so a flat 0 is a floor
			// line, not a half-full block.
			fill[x] = 1 + int(math.Round(min(1, max(0, v))*float64(levels-1)))
		}
	}
	for row := rows - 1; row >= 0; row-- {
		cells := make([]rune, len(cols))
		for x, f := range fill {
			f = min(8, f-row*8)
			if f <= 0 {
				cells[x] = ' '
			} else {
				cells[x] = sparks[f-1]
			}
		}
		out = append(out, " "+paint(cells, kinds, stChartWeights, stChartHarness))
	}
	return out
}

func (r *runView) patienceLines(w int) []string {
	p := r.patience
	if p == nil {
		return []string{"patience: " + stMuted.Render("waiting for the first step")}
	}
	unit := "steps"
	if p.Phase == engine.PhaseHarness {
		unit = "iterations"
	}
	bw := max(5, min(20, w/4))
	maxs := "∞"
	if p.Max > 0 {
		maxs = fmt.Sprint(p.Max)
	}
	out := []string{fmt.Sprintf("patience (%s): %d %s done %s min %d max %s", p.Phase, p.Done, unit, bar(p.Done, max(p.Max, p.Min, p.Done, 1), bw), p.Min, maxs)}
	if p.Limit > 0 {
		out = append(out, fmt.Sprintf("  since best %d/%d %s", p.Since, p.Limit, bar(p.Since, p.Limit, bw)))
	} else {
		out = append(out, fmt.Sprintf("  since best %d (fixed schedule: no patience limit)", p.Since))
	}
	what := "window mean reward"
	if p.Phase == engine.PhaseHarness {
		what = "val score"
	}
	return append(out, fmt.Sprintf("  %s: best %.3f, now %.3f", what, p.Best, p.Current))
}

// wideFrom is the width from which the Run pane shares the screen with the
// leaderboard and the latest events; sideWidth fits a leaderboard row.
const (
	wideFrom  = 140
	sideWidth = 74
)

// side is the right column of a wide Run pane: the leaderboard (up to
// half the height), then as many of the latest events as fit.
func (runPane) side(m *Model, w, h int) []string {
	out := []string{stHeader.Render("harnesses") + stMuted.Render("  (2 to prune, diff or freeze)")}
	if len(m.run.board) == 0 {
		out = append(out, stMuted.Render("no leaderboard yet: it appears with the first harness iteration"))
	} else {
		out = append(out, m.panes.harnesses.boardTable(m, max(1, min(len(m.run.board), h/2-2)), w)...)
	}
	out = append(out, "", stHeader.Render("events"))
	l := m.run.log
	return append(out, l[max(0, len(l)-(h-len(out))):]...)
}

// sideBySide joins two columns line by line, the left one padded or cut to
// lw cells.
func sideBySide(left, right []string, lw int) []string {
	out := make([]string, max(len(left), len(right)))
	sep := stMuted.Render(" │ ")
	for i := range out {
		l, r := "", ""
		if i < len(left) {
			l = ansi.Truncate(left[i], lw, "…")
		}
		if i < len(right) {
			r = right[i]
		}
		out[i] = l + strings.Repeat(" ", max(0, lw-ansi.StringWidth(l))) + sep + r
	}
	return out
}

// progressLines are the work in flight as a bar with its rollouts and an
// ETA, and the ledger per purpose against the budget; none without a
// polled progress (a viewer of another process's run).
func (m *Model) progressLines(w int) []string {
	p := m.prog
	if p == nil {
		return nil
	}
	var out []string
	if p.Total > 0 && p.Done < p.Total {
		eta := "ETA —"
		if d, ok := p.ETA(m.now); ok {
			eta = "ETA " + d.Round(time.Second).String()
		}
		bw := max(5, min(20, w/5))
		took := m.now.Sub(p.Since).Truncate(time.Second).String() + " so far"
		out = append(out, wrapParts([]string{fmt.Sprintf("%s %s %d/%d rollouts", p.What, bar(p.Done, p.Total, bw), p.Done, p.Total), took, eta}, w)...)
	}
	l := p.Ledger
	parts := []string{fmt.Sprintf("ledger: training %d calls", l.TrainCalls), fmt.Sprintf("search %d calls", l.SearchCalls)}
	switch {
	case p.TwoLedgers():
		parts = []string{"ledger: " + p.LedgerText()}
	case p.Budget > 0:
		parts = append(parts, fmt.Sprintf("budget %d used, %d left", l.Budgeted(), max(0, p.Budget-l.Budgeted())))
	}
	parts = append(parts, fmt.Sprintf("evaluation %d calls (outside the budget)", l.EvalCalls))
	out = append(out, wrapParts(parts, w)...)
	if p.Servers != nil {
		out = append(out, wrapParts(p.Servers.Lines(), w)...)
	}
	return out
}

// wrapParts joins parts with " · " into lines of at most w cells,
// breaking between parts (a part wider than w gets a line of its own).
func wrapParts(parts []string, w int) []string {
	var out []string
	line := ""
	for _, p := range parts {
		switch {
		case line == "":
			line = p
		case ansi.StringWidth(line)+3+ansi.StringWidth(p) <= w:
			line += " · " + p
		default:
			out = append(out, line)
			line = "  " + p
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
