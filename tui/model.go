package tui

import (
	"context"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"whale/core/engine"
	"whale/tui/keymap"
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
	// ReadOnly, when set, is why this workbench may not steer the run (a
	// viewer of a run a bench owns, or one opened with --read-only): keys
	// that change the run are refused with it.
	ReadOnly string
	// Gold, when set, is the gold answer of a task by id (the sample
	// inspector shows it beside what the sample answered).
	Gold func(taskID string) (string, bool)
	// Progress, when set, is polled on every tick: the work in flight
	// (a bar with its rollouts and an ETA) and the ledger per purpose.
	// Only the process that runs the engine has it.
	Progress func() engine.Progress
	// Status is the footer's state at the start ("" : running), for a
	// stored run that nothing runs.
	Status string
	// StreamEnd, when set, says why Events closed (the owner exited, the
	// run finished): the footer shows it once the events stop.
	StreamEnd func() string
	// Keys, when set, are the keys in force (LoadKeys: the defaults
	// changed by m.keys.toml); nil keeps the defaults.
	Keys *keymap.Map
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

// Model is the workbench's top tea.Model: the state the panes share, and
// one sub-model per pane that it hands the focused pane's keys and view.
type Model struct {
	// keys are the bindings in force (Options.Keys).
	keys   keyMap
	opt    Options
	ctx    context.Context
	cancel context.CancelFunc

	width, height int
	pane          pane
	help          bool
	confirm       *engine.Command // f was pressed: y sends this force, meant for the phase then on screen
	forkAsk       string          // r was pressed on this checkpoint; y forks it
	err           string
	status        string // the run's end, once known
	// ack acknowledges the last control command: queued, applied at a
	// step, or refused; pending are those sent and not yet journaled.
	ack     string
	pending []pendingCmd
	// prog is the last polled progress (nil without Options.Progress).
	prog *engine.Progress
	// whole is a footer message shown whole (enter on a cut one).
	whole     *string
	wholeView scroller
	started   time.Time
	now       time.Time

	run   runView
	panes struct {
		run         runPane
		harnesses   harnessPane
		samples     samplePane
		checkpoints checkpointPane
		log         logPane
	}
	// filter narrows each pane's list (`/`); filtering while it is typed
	// into input.
	filter    [paneCount]string
	filtering bool
	input     textinput.Model
}

// paneModel is one pane: update handles the keys the frame leaves to it,
// view draws it in w×h.
type paneModel interface {
	update(m *Model, k tea.KeyMsg) tea.Cmd
	view(m *Model, w, h int) []string
}

// focused is the pane on screen.
func (m *Model) focused() paneModel {
	switch m.pane {
	case paneHarnesses:
		return &m.panes.harnesses
	case paneSamples:
		return &m.panes.samples
	case paneCheckpoints:
		return &m.panes.checkpoints
	case paneLog:
		return &m.panes.log
	}
	return &m.panes.run
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
	lastStep    *engine.WeightStepData // the last weight step
	board       []BoardRow
	knobs       []string
	frozen      map[string]bool
	checkpoints []checkpoint
	log         []string
	dropped     int
	paused      bool
	finished    bool
	// ended is the last phase end not yet matched with its checkpoint.
	ended *engine.PhaseRecord
	// marks are leaderboard rows this workbench pruned or unpruned, shown
	// before the engine's next board says so (control.go).
	marks   map[string]rowMark
	summary *engine.Summary
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
	// Val is val mean@k at the checkpoint's boundary, once known.
	Val    float64
	HasVal bool
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
)

// New returns a workbench for opt; History is applied at once.
func New(opt Options) *Model {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	ks := keys
	if opt.Keys != nil {
		ks = keysFrom(*opt.Keys)
	}
	m := &Model{opt: opt, keys: ks, ctx: ctx, cancel: cancel, width: 80, height: 24, input: newFilterInput(ks)}
	m.panes.harnesses.diffView = newScroller(ks)
	m.panes.samples.detailView = newScroller(ks)
	m.panes.log.whole = newScroller(ks)
	m.wholeView = newScroller(ks)
	m.status = opt.Status
	m.started = opt.Now()
	m.now = m.started
	for _, ev := range opt.History {
		m.apply(ev)
	}
	// A refusal in the history is in the log; the footer is for now.
	m.err, m.ack = "", ""
	return m
}

// gold is a task's gold answer, "—" when unknown.
func (m *Model) gold(taskID string) (string, bool) {
	if m.opt.Gold == nil {
		return "—", false
	}
	g, ok := m.opt.Gold(taskID)
	if !ok {
		return "—", false
	}
	return g, true
}

// Stop cancels the run the model started; the engine stops at its next
// check and keeps its last resume point.
func (m *Model) Stop() { m.cancel() }

// Init starts the engine, the event reader and the redraw tick.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tick(), m.panes.samples.load(m.opt.Samples)}
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

// Update handles one message; it never does I/O.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		m.now = m.opt.Now()
		if m.opt.Progress != nil {
			p := m.opt.Progress()
			m.prog = &p
		}
		// The Samples pane follows the run live: it reloads (a store
		// read, in a tea.Cmd) once new samples exist, at most once a
		// second.
		sp := &m.panes.samples
		if m.pane == paneSamples && sp.stale && !sp.loading && m.now.Sub(sp.loadedAt) >= time.Second {
			sp.stale, sp.loadedAt = false, m.now
			return m, tea.Batch(tick(), sp.load(m.opt.Samples))
		}
		return m, tick()
	case eventsMsg:
		for _, ev := range msg.events {
			m.apply(ev)
			if ev.Kind == engine.EvWeightStep || ev.Kind == engine.EvHarnessIteration {
				m.panes.samples.stale = true // new samples are stored
			}
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
		m.panes.harnesses.loaded(msg)
	case samplesMsg:
		m.panes.samples.loaded(m, msg)
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

func (m *Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	// A message the footer had to cut opens whole on enter; ↑↓ scroll
	// it and any other key closes it.
	if m.whole != nil {
		if key.Matches(k, m.keys.Up) || key.Matches(k, m.keys.Down) || key.Matches(k, m.keys.PageUp) || key.Matches(k, m.keys.PageDown) {
			m.wholeView.update(k)
			return m, nil
		}
		m.whole = nil
		m.wholeView.top()
		return m, nil
	}
	if msg := m.footerMessage(); msg != "" && ansi.StringWidth(msg) > m.width && key.Matches(k, m.keys.Enter) {
		m.whole, m.err = &msg, ""
		return m, nil
	}
	m.err = ""
	if m.filtering {
		m.filterKey(k)
		return m, nil
	}
	if c := m.confirm; c != nil {
		m.confirm = nil
		if key.Matches(k, m.keys.Yes) {
			m.send(*c)
		} else {
			m.ack = "force not sent"
		}
		return m, nil
	}
	if id := m.forkAsk; id != "" {
		m.forkAsk = ""
		if key.Matches(k, m.keys.Yes) {
			m.opt.Fork(id)
			m.status = "starting a new run from " + id
			m.cancel()
			return m, tea.Quit
		}
		return m, nil
	}
	if m.help {
		m.help = false
		if !key.Matches(k, m.keys.Quit) {
			return m, nil
		}
	}
	switch {
	case key.Matches(k, m.keys.Quit):
		m.cancel()
		return m, tea.Quit
	case key.Matches(k, m.keys.Help):
		m.help = true
	case key.Matches(k, m.keys.Force):
		if why := m.steerRefusal(); why != "" {
			m.err = "force refused: " + why
			break
		}
		c, ok := m.forceTarget()
		if !ok {
			m.err = "no phase is running to force"
			break
		}
		m.confirm = &c
	case key.Matches(k, m.keys.Filter):
		if m.pane == paneRun || (m.pane == paneSamples && m.panes.samples.detail) {
			m.err = "nothing to filter here"
		} else {
			m.startFilter()
		}
	case key.Matches(k, m.keys.Pause):
		if m.run.paused || m.pendingKind("pause") {
			m.send(engine.Command{Kind: "resume"})
		} else {
			m.send(engine.Command{Kind: "pause"})
		}
	case key.Matches(k, m.keys.Run):
		m.pane = paneRun
	case key.Matches(k, m.keys.Harnesses):
		m.pane = paneHarnesses
	case key.Matches(k, m.keys.Samples):
		m.pane = paneSamples
		return m, m.panes.samples.load(m.opt.Samples)
	case key.Matches(k, m.keys.Checkpoints):
		m.pane = paneCheckpoints
	case key.Matches(k, m.keys.Log):
		m.pane = paneLog
	case key.Matches(k, m.keys.Tab):
		m.pane = (m.pane + 1) % paneCount
		if m.pane == paneSamples {
			return m, m.panes.samples.load(m.opt.Samples)
		}
	default:
		return m, m.focused().update(m, k)
	}
	return m, nil
}

func (m *Model) logLine(s string) {
	m.run.log = append(m.run.log, s)
	if len(m.run.log) > logCap {
		m.run.log = append(m.run.log[:0:0], m.run.log[len(m.run.log)-logCap:]...)
	}
}
