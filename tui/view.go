package tui

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"whale/core/engine"
)

// View draws the tab bar, the focused pane and the footer, cut to the
// window.
func (m *Model) View() string {
	w, h := max(20, m.width), max(6, m.height)
	var body []string
	switch {
	case m.help:
		body = m.viewHelp()
	case m.pane == paneRun:
		body = m.viewRun(w)
	case m.pane == paneHarnesses && m.diff != nil:
		body = m.viewDiff(h - 2)
	case m.pane == paneHarnesses:
		body = m.viewHarnesses(w, h-2)
	case m.pane == paneSamples:
		body = m.viewSamples(w, h-2)
	case m.pane == paneCheckpoints:
		body = m.viewCheckpoints(w, h-2)
	default:
		body = m.viewLog(h - 2)
	}
	if f := m.filter[m.pane]; f != "" && !m.filtering && m.pane != paneRun {
		body = append([]string{stMuted.Render("filter /" + f + " (esc in / clears)")}, body...)
	}
	lines := append([]string{m.viewTabs()}, fit(body, h-2)...)
	lines = append(lines, m.viewFooter())
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, w, "…")
	}
	return strings.Join(lines, "\n")
}

func fit(lines []string, h int) []string {
	if len(lines) > h {
		return lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

func (m *Model) viewTabs() string {
	parts := []string{stTitle.Render("whale")}
	for i, n := range paneNames {
		label := fmt.Sprintf("%d %s", i+1, n)
		if pane(i) == m.pane {
			parts = append(parts, stTabActive.Render("["+label+"]"))
		} else {
			parts = append(parts, stTab.Render(" "+label+" "))
		}
	}
	return strings.Join(parts, "  ")
}

func (m *Model) viewFooter() string {
	switch {
	case m.confirm:
		return stConfirm.Render("force a phase switch now? y/n")
	case m.forkAsk != "":
		return stConfirm.Render("start a new run from " + m.forkAsk + "? this run stops, resumable. y/n")
	case m.filtering:
		return stConfirm.Render("/"+m.filter[m.pane]+"▏") + stMuted.Render("  enter keep · esc clear")
	case m.err != "":
		return stError.Render("error: " + m.err)
	}
	state := "running"
	switch {
	case m.status != "":
		state = m.status
	case m.run.finished:
		state = "finished"
	case m.run.paused:
		state = "paused"
	}
	return stMuted.Render(state + " · f force · space pause · ? keys · q quit")
}

func (m *Model) viewHelp() []string {
	// The five pane keys share one line so the map fits 80×24.
	out := []string{stHeader.Render("Keys"), "", fmt.Sprintf("  %-8s %s", "1-5", "panes: run, harnesses, samples, checkpoints, log")}
	for _, b := range keys.all()[5:] {
		out = append(out, fmt.Sprintf("  %-8s %s", b.Help().Key, b.Help().Desc))
	}
	return append(out, "", stMuted.Render("any key closes this"))
}

// viewRun draws the header, the phase timeline, the charts, patience and
// the step stats.
func (m *Model) viewRun(w int) []string {
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
	out := []string{
		stHeader.Render("run "+o.RunID) + stMuted.Render(fmt.Sprintf("  %s · %s · %s schedule · preset %s", o.Domain, o.ModelDesc, o.Schedule, o.Preset)),
		fmt.Sprintf("rollouts %d/%s · round %s · step %d · iteration %d · elapsed %s", r.rollouts, of, rounds, r.step, r.iter, elapsed),
	}
	if g := r.origin; g != nil {
		out = append(out, stMuted.Render(fmt.Sprintf("from checkpoint %s (run %s, round %d %s phase)", g.Checkpoint, g.Run, g.Round, g.Phase)))
	}
	out = append(out, "")
	out = append(out, m.timeline(w-2)...)
	out = append(out, "")
	vals := make([]float64, len(r.vals))
	for i, v := range r.vals {
		vals[i] = v.mean
	}
	out = append(out, chartLine("val mean@k", vals, w), chartLine("reward/step", r.rewards, w), "")
	out = append(out, m.patienceLines(w)...)
	if s := r.stats; s != nil {
		rej := make([]string, 0, len(s.Rejected))
		for _, k := range sortedKeys(s.Rejected) {
			rej = append(rej, fmt.Sprintf("%s %d", k, s.Rejected[k]))
		}
		out = append(out, "",
			fmt.Sprintf("step: kept %d/%d · trained %d · loss %.4f · grad %.3f · lr %.2g", s.Kept, s.Rollouts, s.Trained, s.Loss, s.GradNorm, s.LR),
			"rejected: "+strings.Join(rej, ", "))
	}
	if r.dropped > 0 {
		out = append(out, stMuted.Render(fmt.Sprintf("(%d events skipped while the screen caught up; all are stored)", r.dropped)))
	}
	return out
}

// timeline draws phases as a band over the rollouts, weight phases as █ and
// harness phases as ▒ in two colours, with cycle numbers under the band and
// a cursor where the run is.
func (m *Model) timeline(w int) []string {
	r := &m.run
	total := max(1, r.rollouts)
	if m.opt.Budget > 0 {
		total = max(total, m.opt.Budget)
	}
	w = max(10, w)
	col := func(x int) int { return min(w-1, x*w/total) }
	band := []rune(strings.Repeat("·", w))
	kinds := make([]engine.Phase, w)
	nums := []rune(strings.Repeat(" ", w))
	for _, s := range r.segments {
		end := s.end
		if end < 0 {
			end = r.rollouts
		}
		a, b := col(s.start), col(end)
		if b <= a {
			b = a + 1
		}
		ch := '█'
		if s.kind == engine.PhaseHarness {
			ch = '▒'
		}
		for x := a; x < b && x < w; x++ {
			band[x], kinds[x] = ch, s.kind
		}
		if s.kind == engine.PhaseWeights {
			for i, c := range fmt.Sprint(s.round) {
				if a+i < w {
					nums[a+i] = c
				}
			}
		}
	}
	var sb strings.Builder
	for x, c := range band {
		switch kinds[x] {
		case engine.PhaseWeights:
			sb.WriteString(stWeights.Render(string(c)))
		case engine.PhaseHarness:
			sb.WriteString(stHarness.Render(string(c)))
		default:
			sb.WriteRune(c)
		}
	}
	cursor := []rune(strings.Repeat(" ", w))
	cursor[col(r.rollouts)] = '▲'
	return []string{
		"timeline " + stWeights.Render("█ weights") + "  " + stHarness.Render("▒ harness") + stMuted.Render("  (cycle numbers below)"),
		" " + sb.String(),
		" " + string(nums),
		" " + string(cursor),
	}
}

var sparks = []rune("▁▂▃▄▅▆▇█")

// chartLine is a labelled sparkline of the last values that fit, with the
// latest value and the range.
func chartLine(label string, vs []float64, w int) string {
	head := fmt.Sprintf("%-12s", label)
	if len(vs) == 0 {
		return head + stMuted.Render("—")
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	tail := fmt.Sprintf(" %.3f [%.2f..%.2f]", vs[len(vs)-1], lo, hi)
	room := max(4, w-len(head)-len(tail)-1)
	if len(vs) > room {
		vs = vs[len(vs)-room:]
	}
	var sb strings.Builder
	for _, v := range vs {
		i := 0
		if hi > lo {
			i = int((v - lo) / (hi - lo) * float64(len(sparks)-1))
		}
		sb.WriteRune(sparks[i])
	}
	return head + sb.String() + tail
}

func bar(n, of, w int) string {
	if of <= 0 {
		return ""
	}
	f := min(w, n*w/of)
	return "[" + strings.Repeat("█", f) + strings.Repeat("░", w-f) + "]"
}

func (m *Model) patienceLines(w int) []string {
	p := m.run.patience
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

func (m *Model) viewHarnesses(w, h int) []string {
	if m.knobMode {
		out := []string{stHeader.Render("search-space knobs of the incumbent (frozen knobs are never varied)")}
		for i, kn := range m.run.knobs {
			mark := "[ ]"
			if m.run.frozen[kn] {
				mark = "[frozen]"
			}
			line := fmt.Sprintf("%-8s %s", mark, kn)
			if i == m.knobSel {
				line = stSelected.Render("> " + line)
			} else {
				line = "  " + line
			}
			out = append(out, line)
			if len(out) >= h-1 {
				break
			}
		}
		return append(out, stMuted.Render("enter freeze / free · ↑↓ select · k or esc back"))
	}
	if len(m.run.board) == 0 {
		return []string{stMuted.Render("no leaderboard yet: it appears with the first harness iteration")}
	}
	b := m.boardRows()
	out := []string{stHeader.Render(fmt.Sprintf("  %-3s %-8s %-8s %-14s %-15s %6s %4s %s", "#", "id", "parent", "mechanism", "score ± CI", "rolls", "it", "status"))}
	rows := h - 2
	first := max(0, min(m.boardSel-rows+1, len(b)-rows))
	for i := first; i < len(b) && i < first+rows; i++ {
		r := b[i]
		mech := r.Mechanism
		if len(mech) > 14 {
			mech = mech[:13] + "…"
		}
		line := fmt.Sprintf("%-3d %-8s %-8s %-14s %.3f ±%.3f %6d %4d %s", i+1, short(r.Hash), short(r.Parent), mech,
			r.Score, (r.CIHi-r.CILo)/2, r.Rollouts, r.Iteration, r.Status)
		if i == m.boardSel {
			line = stSelected.Render("> " + line)
		} else {
			line = "  " + line
		}
		out = append(out, line)
	}
	return append(out, stMuted.Render("enter diff vs incumbent · x prune · u unprune · k knobs · ↑↓ select"))
}

func (m *Model) viewSamples(w, h int) []string {
	if m.samplesErr != "" {
		return []string{stError.Render(m.samplesErr)}
	}
	vis := m.visibleSamples()
	if m.detail && m.sampleSel < len(vis) {
		return m.viewSample(vis[m.sampleSel], w, h)
	}
	filter := "all kinds"
	if m.kindFilter != "" {
		filter = m.kindFilter
	}
	kept := "rejected only"
	if m.showKept {
		kept = "kept too"
	}
	out := []string{fmt.Sprintf("%d samples · %s · %s", len(vis), filter, kept)}
	if m.loadingSamp && len(m.samples) == 0 {
		return append(out, stMuted.Render("loading…"))
	}
	out = append(out, stHeader.Render(fmt.Sprintf("  %-6s %-4s %-5s %-8s %-6s %-20s %s", "seq", "rnd", "step", "harness", "reward", "why", "task")))
	rows := h - 3
	first := max(0, min(m.sampleSel-rows+1, len(vis)-rows))
	for i := first; i < len(vis) && i < first+rows; i++ {
		s := vis[i]
		at := s.Step
		if s.Kind == "s" {
			at = s.Iteration
		}
		line := fmt.Sprintf("%-6d %-4d %s%-4d %-8s %-6.2f %-20s %s", s.Seq, s.Round, s.Kind, at, short(s.Harness), s.Trajectory.Reward, s.Why, s.Trajectory.TaskID)
		if i == m.sampleSel {
			line = stSelected.Render("> " + line)
		} else {
			line = "  " + line
		}
		out = append(out, line)
	}
	return append(out, stMuted.Render("enter open · c kind · a kept · r reload"))
}

// viewSample is the whole trajectory: messages, completions, tool calls,
// reward and why.
func (m *Model) viewSample(s Sample, w, h int) []string {
	t := s.Trajectory
	state := stError.Render("rejected")
	if s.Kept {
		state = stGood.Render("kept")
	}
	all := []string{
		fmt.Sprintf("%s sample %d · task %s · round %d · harness %s · reward %.3f", state, s.Seq, t.TaskID, s.Round, short(s.Harness), t.Reward),
		"why: " + s.Why,
	}
	if t.Error != "" {
		all = append(all, "error: "+t.Error)
	}
	all = append(all, fmt.Sprintf("turns %d · format retries %d · invalid retries %d", t.Turns, t.FormatRetries, t.InvalidRetries), "")
	wrap := func(prefix, text string) {
		for _, l := range strings.Split(ansi.Wrap(text, max(10, w-len(prefix)-1), ""), "\n") {
			all = append(all, prefix+l)
		}
	}
	for _, msg := range t.Messages {
		all = append(all, stHeader.Render("["+msg.Role+"]"))
		wrap("  ", msg.Content)
	}
	for i, c := range t.Calls {
		all = append(all, stHeader.Render(fmt.Sprintf("[completion %d, %s]", i+1, c.Finish)))
		wrap("  ", c.Text)
	}
	for _, tc := range t.Tools {
		fail := ""
		if tc.Failed {
			fail = " (failed)"
		}
		all = append(all, stHeader.Render(fmt.Sprintf("[tool %s, turn %d%s]", tc.Tool, tc.Turn, fail)))
		wrap("  args: ", tc.Args)
		wrap("  shown: ", tc.Shown)
	}
	off := min(m.detailOff, max(0, len(all)-(h-1)))
	m.detailOff = off
	all = all[off:]
	if len(all) > h-1 {
		all = all[:h-1]
	}
	return append(all, stMuted.Render("esc back · ↑↓ scroll"))
}

func (m *Model) viewCheckpoints(w, h int) []string {
	cs := m.checkpointRows()
	if len(m.run.checkpoints) == 0 {
		return []string{stMuted.Render("no checkpoint yet: one is kept at each phase boundary")}
	}
	out := []string{stHeader.Render(fmt.Sprintf("  %-24s %-5s %-5s %-8s %-8s %s", "id", "round", "step", "harness", "weights", "val"))}
	rows := h - 2
	first := max(0, min(m.ckptSel-rows+1, len(cs)-rows))
	for i := first; i < len(cs) && i < first+rows; i++ {
		c := cs[i]
		line := fmt.Sprintf("%-24s %-5d %-5d %-8s %-8s %.3f", c.ID, c.Round, c.Step, short(c.Harness), short(c.Weights), c.Val)
		if i == m.ckptSel {
			line = stSelected.Render("> " + line)
		} else {
			line = "  " + line
		}
		out = append(out, line)
	}
	return append(out, stMuted.Render("e export · r new run from it (asks y/n) · ↑↓ select"))
}

func (m *Model) viewLog(h int) []string {
	l := m.logRows()
	end := len(l) - m.logOff
	start := max(0, end-h)
	return append([]string(nil), l[start:end]...)
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
