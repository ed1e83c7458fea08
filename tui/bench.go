package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"whale/core/engine"
)

// BenchJob is one run of a bench as the dashboard lists it.
type BenchJob struct {
	ID, Condition, Domain string
	Seed                  uint64
	// Budget is the run's budget of model calls (its bar's end).
	Budget int
	// History is what the store holds of the run before the bench starts
	// (a bench run again resumes or reads its runs); Done says it is
	// finished already.
	History []engine.Event
	Done    bool
}

// BenchOptions wires the dashboard to a bench.
type BenchOptions struct {
	// Title heads the screen ("bench conditions: math, preset tiny").
	Title string
	Jobs  []BenchJob
	// Stop stops the bench (q, confirmed): runs stop at their last resume
	// point. nil: q only closes the dashboard.
	Stop func()
	// Progress, when set, makes the dashboard headless: it draws nothing
	// and every ProgressEvery writes a line per running run to Progress.
	Progress      io.Writer
	ProgressEvery time.Duration
	// Now is the clock (tests fix it).
	Now func() time.Time
}

// Messages a bench sends the dashboard (Program.Send).
type (
	// BenchRunStarted says a job's engine is about to run. Opt is the
	// run's workbench (History its stored events; Events must be nil);
	// Events, if set, is the engine's subscription, which the dashboard
	// drains.
	BenchRunStarted struct {
		ID     string
		Opt    Options
		Events *engine.Subscription[engine.Event]
	}
	// BenchRunEnded says a job's engine returned (Err nil: finished).
	BenchRunEnded struct {
		ID  string
		Err error
	}
	// BenchFinished says the whole bench returned (Err nil: every run
	// finished).
	BenchFinished struct{ Err error }
)

// benchEventsMsg carries a running job's events.
type benchEventsMsg struct {
	id int
	ev eventsMsg
}

// benchTick redraws elapsed times and ETAs; in headless mode it is also
// when progress lines are written.
type benchTick time.Time

// benchBack is the workbench footer's note of a run opened from the
// dashboard.
const benchBack = "q: back to the bench"

// Job states.
const (
	jobWaiting = "waiting"
	jobRunning = "running"
	jobDone    = "done"
	jobStopped = "stopped"
	jobFailed  = "failed"
)

type benchRow struct {
	job   BenchJob
	m     *Model
	state string
	err   string
	// started and ended are this process's wall clock around the run;
	// spent0 the budget already spent when it started (a resumed run).
	started, ended time.Time
	spent0         int
	events         *engine.Subscription[engine.Event]
}

// Bench is the bench dashboard's tea.Model: a row per run and the
// selected run's phase timeline; enter opens the run in the workbench.
type Bench struct {
	opt           BenchOptions
	rows          []*benchRow
	byID          map[string]int
	sel           int
	open          *benchRow // the run shown in the workbench, or nil
	confirm       bool      // q was pressed; y stops the bench
	status, err   string
	width, height int
	now           time.Time
}

// NewBench returns the dashboard of opt's jobs.
func NewBench(opt BenchOptions) *Bench {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.ProgressEvery <= 0 {
		opt.ProgressEvery = 30 * time.Second
	}
	b := &Bench{opt: opt, byID: map[string]int{}, width: 80, height: 24, now: opt.Now()}
	for i, j := range opt.Jobs {
		r := &benchRow{job: j, state: jobWaiting, m: New(Options{RunID: j.ID, Domain: j.Domain, Budget: j.Budget, History: j.History, Now: opt.Now, Attached: benchBack})}
		if j.Done {
			r.state = jobDone
		}
		b.rows = append(b.rows, r)
		b.byID[j.ID] = i
	}
	return b
}

// Init starts the clock.
func (b *Bench) Init() tea.Cmd { return b.tick() }

func (b *Bench) tick() tea.Cmd {
	every := time.Second
	if b.opt.Progress != nil {
		every = b.opt.ProgressEvery
	}
	return tea.Tick(every, func(t time.Time) tea.Msg { return benchTick(t) })
}

func waitBenchEvents(id int, sub *engine.Subscription[engine.Event]) tea.Cmd {
	return func() tea.Msg {
		_, ok := <-sub.Ready()
		evs, dropped := sub.Drain()
		return benchEventsMsg{id: id, ev: eventsMsg{events: evs, dropped: dropped, closed: !ok}}
	}
}

// Update handles one message; it never does I/O (progress lines are
// written by the command it returns).
func (b *Bench) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		b.width, b.height = msg.Width, msg.Height
		for _, r := range b.rows {
			r.m.Update(msg)
		}
		return b, nil
	case benchTick:
		b.now = b.opt.Now()
		if b.open != nil {
			b.open.m.Update(tickMsg(msg))
		}
		if b.opt.Progress != nil {
			return b, tea.Batch(b.printProgress(), b.tick())
		}
		return b, b.tick()
	case BenchRunStarted:
		return b, b.started(msg)
	case benchEventsMsg:
		r := b.rows[msg.id]
		r.m.Update(msg.ev)
		if msg.ev.closed || r.events == nil {
			return b, nil
		}
		return b, waitBenchEvents(msg.id, r.events)
	case BenchRunEnded:
		b.ended(msg)
		return b, nil
	case BenchFinished:
		return b, b.finished(msg)
	case tea.KeyMsg:
		return b.key(msg)
	}
	// Replies to the open workbench's own commands (samples, a diff).
	if b.open != nil {
		_, cmd := b.open.m.Update(msg)
		return b, cmd
	}
	return b, nil
}

func (b *Bench) started(msg BenchRunStarted) tea.Cmd {
	i, ok := b.byID[msg.ID]
	if !ok {
		return nil
	}
	r := b.rows[i]
	opt := msg.Opt
	opt.Events, opt.Run, opt.Fork = nil, nil, nil // the dashboard drains the events; the bench runs the engine
	if opt.Now == nil {
		opt.Now = b.opt.Now
	}
	if opt.Attached == "" {
		opt.Attached = benchBack
	}
	r.m = New(opt)
	r.m.Update(tea.WindowSizeMsg{Width: b.width, Height: b.height})
	r.state, r.err, r.started, r.ended = jobRunning, "", b.opt.Now(), time.Time{}
	r.spent0, r.events = r.m.run.rollouts, msg.Events
	if b.open == r {
		b.open = nil // its workbench was the stored history's
	}
	if r.events == nil {
		return nil
	}
	return waitBenchEvents(i, r.events)
}

func (b *Bench) ended(msg BenchRunEnded) {
	i, ok := b.byID[msg.ID]
	if !ok {
		return
	}
	r := b.rows[i]
	r.ended = b.opt.Now()
	// The row keeps the run's timeline, not its engine: the engine's
	// model, samplers and caches (hundreds of MB) would otherwise stay
	// reachable for the rest of the bench, one more with every run. Keys
	// that would command it are refused from now on, and its progress
	// (a method value bound to the engine) is polled once more, for its
	// final ledger, and then no longer. Gold must be a func that holds no
	// engine (engine.Engine.Gold's table).
	if poll := r.m.opt.Progress; poll != nil {
		p := poll()
		r.m.prog = &p
	}
	r.m.opt.Control, r.m.opt.Progress = nil, nil
	switch {
	case msg.Err == nil:
		r.state = jobDone
	case errors.Is(msg.Err, context.Canceled) || errors.Is(msg.Err, context.DeadlineExceeded):
		r.state = jobStopped
	default:
		r.state, r.err = jobFailed, msg.Err.Error()
	}
}

func (b *Bench) finished(msg BenchFinished) tea.Cmd {
	if msg.Err != nil {
		b.status = "bench stopped: " + msg.Err.Error()
	} else {
		b.status = "bench finished: q leaves and writes the report"
	}
	if b.opt.Progress != nil {
		return tea.Quit
	}
	return nil
}

func (b *Bench) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	b.err = ""
	if r := b.open; r != nil {
		// q (or ctrl+c) leaves the run's workbench for the list, unless
		// the workbench is asking or typing.
		if key.Matches(k, r.m.keys.Quit) && !r.m.filtering && r.m.confirm == nil {
			b.open = nil
			return b, nil
		}
		_, cmd := r.m.Update(k)
		return b, cmd
	}
	if b.confirm {
		b.confirm = false
		if key.Matches(k, keys.Yes) {
			if b.opt.Stop != nil {
				b.opt.Stop()
			}
			return b, tea.Quit
		}
		return b, nil
	}
	switch {
	case key.Matches(k, keys.Quit):
		if b.status != "" || b.opt.Stop == nil {
			return b, tea.Quit
		}
		b.confirm = true
	case key.Matches(k, keys.Up):
		b.sel = max(0, b.sel-1)
	case key.Matches(k, keys.Down):
		b.sel = min(len(b.rows)-1, b.sel+1)
	case key.Matches(k, keys.Enter):
		if len(b.rows) == 0 {
			return b, nil
		}
		r := b.rows[b.sel]
		if r.state == jobWaiting && len(r.m.run.log) == 0 {
			b.err = r.job.ID + " has not started yet"
			return b, nil
		}
		b.open = r
		r.m.now = b.now
		return b, r.m.panes.samples.load(r.m.opt.Samples)
	}
	return b, nil
}

// printProgress writes a line per running run (headless mode).
func (b *Bench) printProgress() tea.Cmd {
	var lines []string
	for i, r := range b.rows {
		if r.state == jobRunning {
			lines = append(lines, fmt.Sprintf("[%d/%d] %s", i+1, len(b.rows), b.progressLine(r)))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	w := b.opt.Progress
	return func() tea.Msg {
		fmt.Fprintln(w, strings.Join(lines, "\n"))
		return nil
	}
}

// progressLine says where a running run is: phase, budget, best val,
// elapsed and ETA.
func (b *Bench) progressLine(r *benchRow) string {
	st := b.stats(r)
	where := "starting"
	if r.m.run.phase != "" {
		where = fmt.Sprintf("round %d %s", r.m.run.round, r.m.run.phase)
	}
	return fmt.Sprintf("%s: %s, %d/%d model calls (%d%%), best val %s, elapsed %s, ETA %s",
		r.job.ID, where, st.spent, st.budget, st.pct, st.best, st.elapsed, st.eta)
}

// rowStats are a row's figures as the dashboard prints them.
type rowStats struct {
	spent, budget, pct int
	best, elapsed, eta string
}

func (b *Bench) stats(r *benchRow) rowStats {
	run := &r.m.run
	st := rowStats{spent: run.rollouts, budget: r.m.opt.Budget, best: "—", elapsed: "—", eta: "—"}
	if st.budget > 0 {
		st.pct = min(100, 100*st.spent/st.budget)
	}
	best, have := 0.0, false
	for _, v := range run.vals {
		if !have || v.mean > best {
			best, have = v.mean, true
		}
	}
	if run.summary != nil {
		best, have = run.summary.BestValMean, true
	}
	if have {
		st.best = fmt.Sprintf("%.3f", best)
	}
	if r.started.IsZero() {
		if r.state == jobDone {
			st.eta = "done"
		}
		return st
	}
	end := b.now
	if !r.ended.IsZero() {
		end = r.ended
	}
	took := end.Sub(r.started)
	st.elapsed = took.Round(time.Second).String()
	switch {
	case r.state == jobDone:
		st.eta = "done"
	case r.state == jobRunning && st.spent > r.spent0 && st.budget > st.spent:
		// The budget counts training and scoring calls; evaluation comes
		// on top, so this is the shortest the rest can take.
		left := time.Duration(float64(took) * float64(st.budget-st.spent) / float64(st.spent-r.spent0))
		st.eta = "~" + left.Round(time.Second).String()
	case r.state == jobRunning && st.budget > 0 && st.spent >= st.budget:
		st.eta = "testing" // the budget is spent; the final evaluation runs
	}
	return st
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
