package tui

import (
	"context"
	"fmt"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"whale/core/engine"
	"whale/core/weights"
)

// Controller is where control commands go: the engine in a run, a fake in
// tests.
type Controller interface {
	Send(engine.Command) error
}

// Options wires a workbench to a run.
type Options struct {
	RunID     string
	Domain    string
	ModelDesc string
	Schedule  string // how phases alternate: engine.Config.ScheduleName
	Preset    string
	Budget    int // 0: the rounds bound the run
	Rounds    int
	// Events is the engine's subscription; nil shows only History.
	Events *engine.Subscription[engine.Event]
	// Control receives force, pause, resume, prune and unprune.
	Control Controller
	// Run runs the engine to its end or until ctx is cancelled; nil when
	// something else drives the engine (tests).
	Run func(ctx context.Context) error
	// History are the run's stored events, replayed into the panes before
	// live ones (a resumed run).
	History []engine.Event
	// Samples loads the run's stored samples; nil leaves the pane empty.
	Samples func() ([]Sample, error)
	// HarnessSource returns a stored harness's source by hash (the
	// leaderboard's diff); nil turns the diff off.
	HarnessSource func(hash string) (string, error)
	// Export writes a kept checkpoint out of the workspace and returns
	// where (the Checkpoints pane's `e`); nil turns export off.
	Export func(id string) (string, error)
	// Fork is told the kept checkpoint a person chose (`r`, confirmed) to
	// start a new run from; the workbench then stops this run (it stays
	// resumable) and quits, and the caller opens the new run. nil turns r
	// off.
	Fork func(ckptID string)
	// Now is the clock for elapsed time (tests fix it).
	Now func() time.Time
	// Attached is "" when this process runs the engine; else how the
	// workbench watches a run another process owns ("attached": commands
	// go to the owner; "attached, read-only"), shown in the footer.
	Attached string
	// StreamEnd, when set, says why Events closed (the owner exited, the
	// run finished): the footer shows it once the events stop.
	StreamEnd func() string
}

type pane int

const (
	paneRun pane = iota
	paneHarnesses
	paneSamples
	paneCheckpoints
	paneLog
	paneCount
)

var paneNames = [paneCount]string{"Run", "Harnesses", "Samples", "Checkpoints", "Log"}

// Model is the workbench's top tea.Model.
type Model struct {
	opt    Options
	ctx    context.Context
	cancel context.CancelFunc

	width, height int
	pane          pane
	help          bool
	confirm       bool   // f was pressed; y sends force
	forkAsk       string // r was pressed on this checkpoint; y forks it
	err           string
	status        string // the run's end, once known
	started       time.Time
	now           time.Time

	run runView
	// Harnesses pane; diff is open when non-nil.
	boardSel int
	diff     *diffMsg
	diffOff  int
	// Samples pane.
	samples     []Sample
	sampleSel   int
	kindFilter  string
	showKept    bool
	detail      bool
	detailOff   int
	samplesErr  string
	loadingSamp bool
	// Checkpoints and Log panes.
	ckptSel int
	logOff  int
	// knobMode shows the incumbent's search-space knobs (`k`); enter
	// freezes or frees the selected one.
	knobMode bool
	knobSel  int
	// filter narrows each pane's list (`/`); filtering while it is typed.
	filter    [paneCount]string
	filtering bool
}

// runView is what the events have told: the latest-value snapshot the
// panes draw.
type runView struct {
	segments   []segment
	rollouts   int // budget spent (model calls)
	episodes   int // rollouts (episodes) of training and scoring
	round      int
	phase      engine.Phase
	step, iter int
	rewards    []rewardPoint
	vals       []valPoint
	// entropies are the weight steps' mean token entropies; spreads val
	// pass@k − mean@k at the start and at each phase boundary.
	entropies   []float64
	spreads     []float64
	patience    *engine.Patience
	stats       *weights.Stats
	board       []BoardRow
	knobs       []string
	frozen      map[string]bool
	checkpoints []checkpoint
	log         []string
	dropped     int
	paused      bool
	finished    bool
	summary     *engine.Summary
	// valK is the k of the val mean@k charted (from the run's config).
	valK int
	// origin is where the run came from when it was forked.
	origin *engine.ForkOrigin
}

type segment struct {
	kind       engine.Phase
	round      int
	start, end int // budgeted rollouts; end < 0 while running
	forced     bool
	// val is val mean@k when the phase ended (hasVal): the level the
	// chart draws over the phase's columns.
	val    float64
	hasVal bool
}

// rewardPoint is one weight step's mean training reward and the budgeted
// rollouts it spent, [from, to): the chart draws it over those columns.
type rewardPoint struct {
	from, to int
	mean     float64
}

type valPoint struct {
	rollouts int
	mean     float64
}

// BoardRow is one leaderboard row of a harness_iteration event.
type BoardRow = engine.BoardRow

type checkpoint struct {
	ID, Weights, Harness string
	Round, Step          int
	Val                  float64
}

const logCap = 1000

// Messages.
type (
	eventsMsg struct {
		events  []engine.Event
		dropped int
		closed  bool
	}
	runEndedMsg struct{ err error }
	tickMsg     time.Time
	samplesMsg  struct {
		samples []Sample
		err     error
	}
)

// New returns a workbench for opt; History is applied at once.
func New(opt Options) *Model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Model{opt: opt, ctx: ctx, cancel: cancel, width: 80, height: 24}
	m.started = opt.Now()
	m.now = m.started
	for _, ev := range opt.History {
		m.apply(ev)
	}
	// A refusal in the history is in the log; the footer is for now.
	m.err = ""
	return m
}

// Stop cancels the run the model started; the engine stops at its next
// check and keeps its last resume point.
func (m *Model) Stop() { m.cancel() }

// Init starts the engine, the event reader and the redraw tick.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tick(), m.loadSamples()}
	if m.opt.Run != nil {
		run, ctx := m.opt.Run, m.ctx
		cmds = append(cmds, func() tea.Msg { return runEndedMsg{err: run(ctx)} })
	}
	if m.opt.Events != nil {
		cmds = append(cmds, waitEvents(m.opt.Events))
	}
	return tea.Batch(cmds...)
}

// waitEvents blocks until the broker signals, then hands over everything
// queued; Update re-arms it.
func waitEvents(sub *engine.Subscription[engine.Event]) tea.Cmd {
	return func() tea.Msg {
		_, ok := <-sub.Ready()
		evs, dropped := sub.Drain()
		return eventsMsg{events: evs, dropped: dropped, closed: !ok}
	}
}

func tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *Model) loadSamples() tea.Cmd {
	if m.opt.Samples == nil {
		return nil
	}
	m.loadingSamp = true
	load := m.opt.Samples
	return func() tea.Msg {
		s, err := load()
		return samplesMsg{samples: s, err: err}
	}
}

// Update handles one message; it never does I/O.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		m.now = m.opt.Now()
		return m, tick()
	case eventsMsg:
		for _, ev := range msg.events {
			m.apply(ev)
		}
		m.run.dropped += msg.dropped
		if msg.closed {
			if m.opt.StreamEnd != nil && m.status == "" {
				m.status = m.opt.StreamEnd()
			}
			return m, nil
		}
		return m, waitEvents(m.opt.Events)
	case runEndedMsg:
		switch {
		case msg.err == nil:
			m.status = "run finished"
		case m.ctx.Err() != nil:
			m.status = "run stopped; resume it later"
		default:
			m.status = "run failed"
			m.err = msg.err.Error()
		}
	case exportedMsg:
		if msg.err != nil {
			m.err = "export " + msg.id + ": " + msg.err.Error()
		} else {
			m.run.log = append(m.run.log, "exported "+msg.id+" to "+msg.dir)
			m.status = "exported " + msg.id + " to " + msg.dir
		}
	case diffMsg:
		if m.diff != nil && m.diff.hash == msg.hash {
			m.diff = &msg
		}
	case samplesMsg:
		m.loadingSamp = false
		if msg.err != nil {
			m.samplesErr = msg.err.Error()
		} else {
			m.samplesErr = ""
			m.samples = msg.samples
			m.clampSamples()
		}
	case tea.KeyMsg:
		// Keys typed faster than the screen reads them arrive as one
		// message of several runes; each is a key of its own.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			var cmds []tea.Cmd
			for _, r := range msg.Runes {
				_, c := m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
				cmds = append(cmds, c)
			}
			return m, tea.Sequence(cmds...)
		}
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) send(c engine.Command) {
	if m.opt.Control == nil {
		m.err = "no run to control"
		return
	}
	if err := m.opt.Control.Send(c); err != nil {
		m.err = fmt.Sprintf("%s: %v", c.Kind, err)
	}
}

func (m *Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	m.err = ""
	if m.filtering {
		m.filterKey(k)
		return m, nil
	}
	if m.confirm {
		m.confirm = false
		if key.Matches(k, keys.Yes) {
			m.send(engine.Command{Kind: "force"})
		}
		return m, nil
	}
	if id := m.forkAsk; id != "" {
		m.forkAsk = ""
		if key.Matches(k, keys.Yes) {
			m.opt.Fork(id)
			m.status = "starting a new run from " + id
			m.cancel()
			return m, tea.Quit
		}
		return m, nil
	}
	if m.help {
		m.help = false
		if !key.Matches(k, keys.Quit) {
			return m, nil
		}
	}
	switch {
	case key.Matches(k, keys.Quit):
		m.cancel()
		return m, tea.Quit
	case key.Matches(k, keys.Help):
		m.help = true
	case key.Matches(k, keys.Force):
		m.confirm = true
	case key.Matches(k, keys.Filter):
		if m.pane == paneRun || (m.pane == paneSamples && m.detail) {
			m.err = "nothing to filter here"
		} else {
			m.filtering = true
		}
	case key.Matches(k, keys.Pause):
		if m.run.paused {
			m.send(engine.Command{Kind: "resume"})
		} else {
			m.send(engine.Command{Kind: "pause"})
		}
	case key.Matches(k, keys.Run):
		m.pane = paneRun
	case key.Matches(k, keys.Harnesses):
		m.pane = paneHarnesses
	case key.Matches(k, keys.Samples):
		m.pane = paneSamples
		return m, m.loadSamples()
	case key.Matches(k, keys.Checkpoints):
		m.pane = paneCheckpoints
	case key.Matches(k, keys.Log):
		m.pane = paneLog
	case key.Matches(k, keys.Tab):
		m.pane = (m.pane + 1) % paneCount
		if m.pane == paneSamples {
			return m, m.loadSamples()
		}
	default:
		return m.paneKey(k)
	}
	return m, nil
}

func (m *Model) paneKey(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	up, down := key.Matches(k, keys.Up), key.Matches(k, keys.Down)
	switch m.pane {
	case paneHarnesses:
		return m.harnessKey(k, up, down)
	case paneSamples:
		return m.samplesKey(k, up, down)
	case paneCheckpoints:
		return m.checkpointsKey(k, up, down)
	case paneLog:
		switch {
		case up:
			m.logOff = min(max(0, len(m.logRows())-1), m.logOff+1)
		case down:
			m.logOff = max(0, m.logOff-1)
		}
	}
	return m, nil
}

// harnessKey handles the Harnesses pane: the knob list when open, the
// diff when open, else the leaderboard.
func (m *Model) harnessKey(k tea.KeyMsg, up, down bool) (tea.Model, tea.Cmd) {
	if m.knobMode {
		return m.knobKey(k, up, down)
	}
	if key.Matches(k, keys.Knobs) {
		if len(m.run.knobs) == 0 {
			m.err = "no search space seen yet: it appears with the first harness iteration"
			return m, nil
		}
		m.knobMode, m.knobSel = true, min(m.knobSel, len(m.run.knobs)-1)
		return m, nil
	}
	if m.diff != nil {
		switch {
		case key.Matches(k, keys.Back), key.Matches(k, keys.Enter):
			m.diff, m.diffOff = nil, 0
		case up:
			m.diffOff = max(0, m.diffOff-1)
		case down:
			m.diffOff++
		}
		return m, nil
	}
	return m.boardKey(k, up, down)
}

// knobKey handles the knob list: move, freeze or unfreeze, close.
func (m *Model) knobKey(k tea.KeyMsg, up, down bool) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(k, keys.Back), key.Matches(k, keys.Knobs):
		m.knobMode = false
	case up:
		m.knobSel = max(0, m.knobSel-1)
	case down:
		m.knobSel = min(max(0, len(m.run.knobs)-1), m.knobSel+1)
	case key.Matches(k, keys.Enter):
		if m.knobSel < len(m.run.knobs) {
			kn := m.run.knobs[m.knobSel]
			kind := "freeze"
			if m.run.frozen[kn] {
				kind = "unfreeze"
			}
			m.send(engine.Command{Kind: kind, Target: kn})
		}
	}
	return m, nil
}

// boardKey handles the leaderboard: move, open a diff against the
// incumbent, prune or unprune.
func (m *Model) boardKey(k tea.KeyMsg, up, down bool) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(k, keys.Enter):
		rows := m.boardRows()
		if m.boardSel >= len(rows) {
			m.err = "no harness selected"
			return m, nil
		}
		if m.opt.HarnessSource == nil {
			m.err = "no harness archive to read sources from"
			return m, nil
		}
		inc := ""
		for _, r := range m.run.board {
			if r.Status == "incumbent" {
				inc = r.Hash
			}
		}
		if inc == "" {
			m.err = "no incumbent on the board"
			return m, nil
		}
		m.diff = &diffMsg{hash: rows[m.boardSel].Hash, against: inc}
		return m, m.loadDiff(m.diff.hash, inc)
	case up:
		m.boardSel = max(0, m.boardSel-1)
	case down:
		m.boardSel = min(max(0, len(m.boardRows())-1), m.boardSel+1)
	case key.Matches(k, keys.Prune), key.Matches(k, keys.Unprune):
		rows := m.boardRows()
		if m.boardSel >= len(rows) {
			m.err = "no harness selected"
			return m, nil
		}
		kind := "prune"
		if key.Matches(k, keys.Unprune) {
			kind = "unprune"
		}
		m.send(engine.Command{Kind: kind, Target: rows[m.boardSel].Hash})
	}
	return m, nil
}

// samplesKey handles the Samples pane: the list, its filters, a sample's
// detail.
func (m *Model) samplesKey(k tea.KeyMsg, up, down bool) (tea.Model, tea.Cmd) {
	if m.detail {
		switch {
		case key.Matches(k, keys.Back), key.Matches(k, keys.Enter):
			m.detail, m.detailOff = false, 0
		case up:
			m.detailOff = max(0, m.detailOff-1)
		case down:
			m.detailOff++
		}
		return m, nil
	}
	vis := m.visibleSamples()
	switch {
	case up:
		m.sampleSel = max(0, m.sampleSel-1)
	case down:
		m.sampleSel = min(max(0, len(vis)-1), m.sampleSel+1)
	case key.Matches(k, keys.Enter):
		if len(vis) == 0 {
			m.err = "no sample to open"
		} else {
			m.detail = true
		}
	case key.Matches(k, keys.Kind):
		m.kindFilter = nextKind(m.sampleKinds(), m.kindFilter)
		m.sampleSel = 0
	case key.Matches(k, keys.Kept):
		m.showKept = !m.showKept
		m.sampleSel = 0
	case key.Matches(k, keys.Reload):
		return m, m.loadSamples()
	}
	return m, nil
}

// checkpointsKey handles the Checkpoints pane: move, export, fork.
func (m *Model) checkpointsKey(k tea.KeyMsg, up, down bool) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(k, keys.Export):
		rows := m.checkpointRows()
		if m.ckptSel >= len(rows) {
			m.err = "no checkpoint selected"
			return m, nil
		}
		if m.opt.Export == nil {
			m.err = "export is not available here"
			return m, nil
		}
		id, export := rows[m.ckptSel].ID, m.opt.Export
		return m, func() tea.Msg {
			dir, err := export(id)
			return exportedMsg{id: id, dir: dir, err: err}
		}
	case key.Matches(k, keys.Fork):
		rows := m.checkpointRows()
		if m.ckptSel >= len(rows) {
			m.err = "no checkpoint selected"
			return m, nil
		}
		if m.opt.Fork == nil {
			m.err = "starting a run from a checkpoint is not available here"
			return m, nil
		}
		m.forkAsk = rows[m.ckptSel].ID
	case up:
		m.ckptSel = max(0, m.ckptSel-1)
	case down:
		m.ckptSel = min(max(0, len(m.checkpointRows())-1), m.ckptSel+1)
	}
	return m, nil
}

func (m *Model) logLine(s string) {
	m.run.log = append(m.run.log, s)
	if len(m.run.log) > logCap {
		m.run.log = append(m.run.log[:0:0], m.run.log[len(m.run.log)-logCap:]...)
	}
}

func short(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}

// exportedMsg reports a finished checkpoint export.
type exportedMsg struct {
	id, dir string
	err     error
}
