//go:build cuda

package cuda

import (
	"errors"
	"fmt"
	"time"

	"gorgonia.org/cu"
)

// An opt-in profile of where the backend's time goes: with
// WHALE_CUDA_PROFILE=1 in the environment when New runs, every op records
// a CUDA event on the stream as it starts and another as it ends, and its
// host time (from taking the backend's lock to leaving the call). After
// each synchronisation the events' intervals are added into one row per
// op name (GEMMs also by layout and shape). The GPU time of a row is what
// the stream spent between those events: the op's own kernels and copies,
// plus any time the GPU sat idle waiting for the host to queue the rest
// of the op. The events themselves cost the host a few microseconds an
// op, so launch-bound workloads run slower with the profile on.

type profiler struct {
	free    []cu.Event
	all     []cu.Event
	pending []profSpan
	rows    map[string]*ProfileRow
	detail  string // an op's refinement of its row name, set inside the op
	err     error  // the first event error; the profile stops there
}

type profSpan struct {
	name       string
	start, end cu.Event
	host       time.Duration
}

func newProfiler() *profiler { return &profiler{rows: map[string]*ProfileRow{}} }

// event returns a timing event from the free list or a new one.
func (p *profiler) event() (cu.Event, error) {
	if n := len(p.free); n > 0 {
		ev := p.free[n-1]
		p.free = p.free[:n-1]
		return ev, nil
	}
	ev, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return cu.Event{}, err
	}
	p.all = append(p.all, ev)
	return ev, nil
}

// begin records op's start on b's stream and returns what ends the call:
// its end event, its row, then leave (the backend's unlock).
func (p *profiler) begin(b *Backend, op string, leave func()) func() {
	if p.err != nil {
		return leave
	}
	t0 := time.Now()
	start, err := p.event()
	if err == nil {
		err = start.Record(b.stream)
	}
	if err != nil {
		p.err = fmt.Errorf("cuda: profile: %s: %w", op, err)
		return leave
	}
	p.detail = ""
	return func() {
		defer leave()
		end, err := p.event()
		if err == nil {
			err = end.Record(b.stream)
		}
		if err != nil {
			p.err = fmt.Errorf("cuda: profile: %s: %w", op, err)
			return
		}
		name := op
		if p.detail != "" {
			name += " " + p.detail
		}
		p.pending = append(p.pending, profSpan{name: name, start: start, end: end, host: time.Since(t0)})
	}
}

// note refines the current op's row name. Callers check b.prof first, so
// that nothing is formatted (or boxed) when the profile is off.
func (b *Backend) note(format string, args ...any) {
	if b.prof != nil {
		b.prof.detail = fmt.Sprintf(format, args...)
	}
}

// waited adds one synchronisation's wait.
func (p *profiler) waited(d time.Duration) {
	r := p.row(hostWait)
	r.Host += d
	r.Count++
}

func (p *profiler) row(name string) *ProfileRow {
	r := p.rows[name]
	if r == nil {
		r = &ProfileRow{Op: name}
		p.rows[name] = r
	}
	return r
}

// resolve adds the finished spans into their rows; the stream has just
// been synchronised, so every recorded event has completed.
func (p *profiler) resolve() {
	for _, s := range p.pending {
		r := p.row(s.name)
		r.Count++
		r.Host += s.host
		if ms, err := s.start.Elapsed(s.end); err == nil {
			r.GPU += time.Duration(ms * float64(time.Millisecond))
		} else if p.err == nil {
			p.err = fmt.Errorf("cuda: profile: %s: elapsed time: %w", s.name, err)
		}
		p.free = append(p.free, s.start, s.end)
	}
	clear(p.pending)
	p.pending = p.pending[:0]
}

// release destroys the events (at Close).
func (p *profiler) release() error {
	var errs []error
	for i := range p.all {
		if err := cu.DestroyEvent(&p.all[i]); err != nil {
			errs = append(errs, fmt.Errorf("cuda: profile: destroy event: %w", err))
			break
		}
	}
	p.all, p.free, p.pending = nil, nil, nil
	return errors.Join(errs...)
}

// Profiling reports whether the per-op profile is on (WHALE_CUDA_PROFILE
// set, and not to 0, when New ran).
func (b *Backend) Profiling() bool {
	defer b.lock()()
	return b.prof != nil
}

// EnableProfile turns the per-op profile on (with no rows yet, if it was
// off) or off (its events freed), whatever WHALE_CUDA_PROFILE said.
func (b *Backend) EnableProfile(on bool) error {
	defer b.lock()()
	switch {
	case on && b.prof == nil:
		b.prof = newProfiler()
	case !on && b.prof != nil:
		err := b.syncLocked() // the pending events complete before they go
		err = errors.Join(err, b.prof.release())
		b.prof = nil
		return err
	}
	return nil
}

// ProfileReset waits for queued work and forgets every row so far.
func (b *Backend) ProfileReset() error {
	defer b.lock()()
	if b.prof == nil {
		return nil
	}
	err := b.syncLocked()
	clear(b.prof.rows)
	return err
}

// Profile waits for queued work and returns the rows so far, most GPU
// time first (the host's waits last). It returns an error when profiling
// is off or an event failed.
func (b *Backend) Profile() ([]ProfileRow, error) {
	defer b.lock()()
	if b.prof == nil {
		return nil, errors.New("cuda: the profile is off (set WHALE_CUDA_PROFILE=1 before the backend opens)")
	}
	if err := b.syncLocked(); err != nil {
		return nil, err
	}
	rows := make([]ProfileRow, 0, len(b.prof.rows))
	for _, r := range b.prof.rows {
		rows = append(rows, *r)
	}
	sortProfile(rows)
	return rows, b.prof.err
}
