package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// samplePane is the Samples pane: the stored rollouts newest first,
// narrowed to a failure kind (`c`) and to rejected ones unless `a`; enter
// opens the selected one's whole trajectory.
type samplePane struct {
	samples  []Sample // as loaded
	sel      int
	kind     string // the failure kind shown; "" all
	showKept bool
	detail   bool
	// detailView scrolls the open sample.
	detailView scroller
	err        string // the last load's error
	loading    bool
	// stale says samples were stored since the last load; loadedAt is
	// when the last live reload began.
	stale    bool
	loadedAt time.Time
}

type samplesMsg struct {
	samples []Sample
	err     error
}

// load returns the command that reads the samples through src (store I/O);
// nil when there is nothing to read them from.
func (p *samplePane) load(src func() ([]Sample, error)) tea.Cmd {
	if src == nil {
		return nil
	}
	p.loading = true
	return func() tea.Msg {
		s, err := src()
		return samplesMsg{samples: s, err: err}
	}
}

// loaded takes a finished load.
func (p *samplePane) loaded(m *Model, msg samplesMsg) {
	p.loading = false
	if msg.err != nil {
		p.err = msg.err.Error()
		return
	}
	p.err = ""
	// A reload (by hand or live) keeps the selected sample selected.
	var selSeq uint64
	if vis := p.visible(m); p.sel < len(vis) {
		selSeq = vis[p.sel].Seq
	}
	p.samples = msg.samples
	vis := p.visible(m)
	n := len(vis)
	for i, s := range vis {
		if s.Seq == selSeq {
			p.sel = i
		}
	}
	p.sel = min(p.sel, max(0, n-1))
	if n == 0 {
		p.detail = false
	}
}

// update handles the list, its filters, and an open sample.
func (p *samplePane) update(m *Model, k tea.KeyMsg) tea.Cmd {
	vis := p.visible(m)
	if p.detail {
		switch {
		case key.Matches(k, m.keys.Back) || key.Matches(k, m.keys.Enter):
			p.detail = false
			p.detailView.top()
		case key.Matches(k, m.keys.Next):
			if p.sel+1 < len(vis) {
				p.sel++
				p.detailView.top()
			} else {
				m.err = "this is the last sample"
			}
		case key.Matches(k, m.keys.Prev):
			if p.sel > 0 {
				p.sel--
				p.detailView.top()
			} else {
				m.err = "this is the first sample"
			}
		default:
			p.detailView.update(k)
		}
		return nil
	}
	page := max(1, m.height-6)
	switch {
	case key.Matches(k, m.keys.Up):
		p.sel = max(0, p.sel-1)
	case key.Matches(k, m.keys.Down):
		p.sel = min(max(0, len(vis)-1), p.sel+1)
	case key.Matches(k, m.keys.PageUp):
		p.sel = max(0, p.sel-page)
	case key.Matches(k, m.keys.PageDown):
		p.sel = min(max(0, len(vis)-1), p.sel+page)
	case key.Matches(k, m.keys.Enter):
		if len(vis) == 0 {
			m.err = "no sample to open"
		} else {
			p.detail = true
		}
	case key.Matches(k, m.keys.Kind):
		p.kind = nextKind(p.kinds(), p.kind)
		p.sel = 0
	case key.Matches(k, m.keys.Kept):
		p.showKept = !p.showKept
		p.sel = 0
	}
	return nil
}

// visible is the samples the list shows: the pane's kind and kept
// choices, and its `/` filter.
func (p *samplePane) visible(m *Model) []Sample {
	var out []Sample
	for _, s := range p.samples {
		if s.Kept && !p.showKept {
			continue
		}
		if p.kind != "" && s.Why != p.kind {
			continue
		}
		// "round 2" (or "r2") narrows to a cycle, a hash prefix to a harness.
		if !matches(m.filter[paneSamples], s.Why, s.Harness, s.Trajectory.TaskID,
			fmt.Sprintf("round %d", s.Round), fmt.Sprintf("r%d ", s.Round)) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// kinds lists the failure kinds present, sorted.
func (p *samplePane) kinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range p.samples {
		if !s.Kept && !seen[s.Why] {
			seen[s.Why] = true
			out = append(out, s.Why)
		}
	}
	slices.Sort(out)
	return out
}

// nextKind cycles "" (all) → each kind → "".
func nextKind(kinds []string, cur string) string {
	if cur == "" {
		if len(kinds) == 0 {
			return ""
		}
		return kinds[0]
	}
	i := slices.Index(kinds, cur)
	if i < 0 || i+1 >= len(kinds) {
		return ""
	}
	return kinds[i+1]
}

func (p *samplePane) view(m *Model, w, h int) []string {
	if p.err != "" {
		return []string{stError.Render(p.err)}
	}
	vis := p.visible(m)
	if p.detail && p.sel < len(vis) {
		return p.viewSample(m, vis[p.sel], w, h)
	}
	filter := "all kinds"
	if p.kind != "" {
		filter = p.kind
	}
	kept := "rejected only"
	if p.showKept {
		kept = "kept too"
	}
	out := []string{fmt.Sprintf("%d samples · %s · %s", len(vis), filter, kept)}
	if p.loading && len(p.samples) == 0 {
		return append(out, stMuted.Render("loading…"))
	}
	cols := fitColumns(sampleColumns, w, 12)
	out = append(out, stHeader.Render("  "+headLine(sampleColumns, cols)))
	rows := h - 3
	first := max(0, min(p.sel-rows+1, len(vis)-rows))
	for i := first; i < len(vis) && i < first+rows; i++ {
		s := vis[i]
		at := s.Step
		if s.Kind == "s" {
			at = s.Iteration
		}
		gold, _ := m.gold(s.Trajectory.TaskID)
		cells := []string{fmt.Sprint(s.Seq), fmt.Sprint(s.Round), fmt.Sprintf("%s%d", s.Kind, at), short(s.Harness),
			fmt.Sprintf("%.2f", s.Trajectory.Reward), s.Why, answerOf(s), gold, s.Trajectory.TaskID}
		out = append(out, listLine(joinCells(sampleColumns, cols, cells), i == p.sel))
	}
	return append(out, stMuted.Render(keyOf(m.keys.Enter)+" open · "+keyOf(m.keys.Kind)+" kind · "+keyOf(m.keys.Kept)+" kept · "+keyOf(m.keys.PageUp)+" "+keyOf(m.keys.PageDown)+" · follows the run live"))
}

// sampleColumns are the samples list's columns; as the window narrows
// they drop in this order: harness, step, round, answer, gold; seq,
// reward, why and task stay.
var sampleColumns = []column{
	{head: "seq", width: 6},
	{head: "rnd", width: 3, drop: 3},
	{head: "step", width: 5, drop: 2},
	{head: "harness", width: 8, drop: 1},
	{head: "reward", width: 6},
	{head: "why", width: 18},
	{head: "answered", width: 10, drop: 4},
	{head: "gold", width: 10, drop: 5},
	{head: "task"},
}

// answerOf is what a sample's rollout submitted ("—" for nothing).
func answerOf(s Sample) string {
	a := s.Trajectory.FinalAnswer()
	if a == "" {
		return "—"
	}
	// FinalAnswer keys each step by its kind ("answer:41"): the
	// inspector shows what was said.
	parts := strings.Fields(a)
	for i, p := range parts {
		if _, text, ok := strings.Cut(p, ":"); ok {
			parts[i] = text
		}
	}
	return strings.Join(parts, " ")
}

// viewSample is the whole trajectory, scrolled: messages, completions,
// tool calls, reward and why.
func (p *samplePane) viewSample(m *Model, s Sample, w, h int) []string {
	gold, ok := m.gold(s.Trajectory.TaskID)
	if !ok {
		gold = "not known here"
	}
	lines := sampleLines(s, w)
	// The verdict beside the trajectory: what it answered, the gold
	// answer and why the verifier scored it so.
	verdict := fmt.Sprintf("answered %s · gold %s · verifier: %s", answerOf(s), gold, verifierReason(s))
	lines = append(lines[:1:1], append([]string{verdict}, lines[1:]...)...)
	p.detailView.set(lines, h-1)
	n := len(p.visible(m))
	return append(p.detailView.window(), stMuted.Render(fmt.Sprintf("sample %d of %d · n next · p previous · ↑↓ PgUp PgDn scroll · esc back", p.sel+1, n)))
}

// verifierReason is why a sample scored what it did: its failure kind
// (or that it succeeded) and the harness error, if any.
func verifierReason(s Sample) string {
	t := s.Trajectory
	r := string(t.Failure)
	if r == "" {
		r = "no failure"
		if t.Reward < 1 {
			r = fmt.Sprintf("partial credit %.2f", t.Reward)
		}
	}
	if t.Error != "" {
		r += " (" + t.Error + ")"
	}
	return r
}

// sampleLines is a sample's trajectory as lines, its texts wrapped to w.
func sampleLines(s Sample, w int) []string {
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
		vote := ""
		if c.NotChosen {
			vote = fmt.Sprintf(", sample %d, not chosen", c.Sample)
		}
		all = append(all, stHeader.Render(fmt.Sprintf("[completion %d, %s%s]", i+1, c.Finish, vote)))
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
	return all
}
