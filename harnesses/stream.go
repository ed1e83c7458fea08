package harnesses

import (
	"context"
	"fmt"
	"sync"

	"whale/core/policy"
)

// runStream is Run for a policy that batches continuously. Up to
// BatchSize requests are in flight (0: every rollout's). A completion is
// processed as soon as it arrives (a voting call's once all SAMPLES
// have): parse, validate, step or tool call, next_step; the rollout's
// next request is submitted at once, so it joins the batch the policy is
// decoding instead of waiting for the round's slowest episode. A rollout
// that ends frees its slots for the next one not yet started, in task
// order. Started rollouts go on before new ones start: their next request
// reuses the prefix of their last one while it is still cached. A call's
// slots stay taken until its last sample arrives, so the bound holds
// exactly.
//
// With Lanes above 1 and a policy that offers them (policy.Laned), the
// rollouts are driven over that many streams at once, one goroutine each:
// a lane that has room claims the next task's rollouts (all its draws, so
// that they share their prompt in one stream), and the lanes share
// BatchSize. A rollout's trajectory depends on its own completions alone,
// so the lanes change when a trajectory is made, never what it is.
//
// Request ids are rollout index × SAMPLES + sample, so a completion finds
// its rollout without a map.
func (rt *runner) runStream(ctx context.Context, pol policy.Streamer, rs []*rollout, group int) error {
	var sts []policy.Stream
	if l, ok := pol.(policy.Laned); ok && rt.opts.Lanes > 1 {
		var err error
		if sts, err = l.OpenLanes(rt.opts.Lanes); err != nil {
			return fmt.Errorf("harnesses: run: policy: %w", err)
		}
	} else {
		st, err := pol.OpenStream()
		if err != nil {
			return fmt.Errorf("harnesses: run: policy: %w", err)
		}
		sts = []policy.Stream{st}
	}
	f := &feed{rs: rs, group: max(group, 1), progress: rt.opts.Progress}
	n := max(1, rt.h.Samples)
	slots := rt.opts.BatchSize
	if slots <= 0 {
		slots = len(rs) * n
	}
	// Each lane gets its share of the slots, and room for one call.
	slots = max((slots+len(sts)-1)/len(sts), n)
	if f.progress != nil {
		f.progress(0, len(rs))
	}
	if len(sts) == 1 {
		defer sts[0].Close()
		return rt.drive(ctx, sts[0], f, slots)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var first error // what failed the run; the other lanes then stop
	var wg sync.WaitGroup
	for _, st := range sts {
		wg.Go(func() {
			defer st.Close()
			if err := rt.drive(ctx, st, f, slots); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	return first
}

// feed hands a run's rollouts out to its lanes, a task's draws at a time,
// in task order, and counts the finished ones.
type feed struct {
	mu       sync.Mutex
	rs       []*rollout
	group    int // consecutive rollouts claimed together
	next     int // the first rollout no lane has claimed
	done     int
	progress func(done, total int)
}

// claim returns the next group of unclaimed rollouts, indices lo to hi
// (an empty range when every rollout is claimed).
func (f *feed) claim() (lo, hi int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lo, hi = f.next, min(f.next+f.group, len(f.rs))
	f.next = hi
	return lo, hi
}

// finished counts one more rollout done and reports progress.
func (f *feed) finished() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done++
	if f.progress != nil {
		f.progress(f.done, len(f.rs))
	}
}

// drive runs the rollouts one lane claims from f over st, keeping at most
// slots requests in flight, until f has none left and every claimed
// rollout has finished.
func (rt *runner) drive(ctx context.Context, st policy.Stream, f *feed, slots int) error {
	rs := f.rs
	n := max(1, rt.h.Samples)
	got := make([][]policy.Completion, len(rs)) // completions of each rollout's pending call
	arrived := make([]int, len(rs))
	waiting := make([]bool, len(rs)*n) // by request id
	next, end := 0, 0                  // rollouts claimed, not started
	taken := 0
	// send submits rollout i's pending call, or counts it finished if it
	// has none.
	send := func(i int) error {
		r := rs[i]
		if r.done {
			f.finished()
			return nil
		}
		got[i], arrived[i] = make([]policy.Completion, n), 0
		for j, req := range rt.requests(r) {
			if err := st.Submit(i*n+j, req); err != nil {
				return fmt.Errorf("harnesses: run: policy: %w", err)
			}
			waiting[i*n+j] = true
		}
		taken += n
		return nil
	}
	for {
		for taken+n <= slots {
			if next == end {
				if next, end = f.claim(); next == end {
					break
				}
			}
			i := next
			next++
			rt.advance(rs[i])
			if err := send(i); err != nil {
				return err
			}
		}
		if taken == 0 {
			return nil // every rollout claimed, and this lane's finished
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("harnesses: run: %w", err)
		}
		res, err := st.Next(ctx)
		if err != nil {
			return fmt.Errorf("harnesses: run: policy: %w", err)
		}
		if res.ID < 0 || res.ID >= len(waiting) || !waiting[res.ID] {
			return fmt.Errorf("harnesses: run: policy returned a completion for request id %d, which is not in flight", res.ID)
		}
		waiting[res.ID] = false
		i := res.ID / n
		got[i][res.ID%n] = res.Completion
		// A voting call holds its slots until its last sample arrives:
		// its next call needs them back.
		if arrived[i]++; arrived[i] < n {
			continue
		}
		taken -= n
		comps := got[i]
		got[i] = nil
		rt.deliver(rs[i], comps)
		rt.advance(rs[i])
		if err := send(i); err != nil {
			return err
		}
	}
}
