package harnesses

import (
	"context"
	"fmt"

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
// Request ids are rollout index × SAMPLES + sample, so a completion finds
// its rollout without a map.
func (rt *runner) runStream(ctx context.Context, pol policy.Streamer, rs []*rollout) error {
	st, err := pol.OpenStream()
	if err != nil {
		return fmt.Errorf("harnesses: run: policy: %w", err)
	}
	defer st.Close()
	n := max(1, rt.h.Samples)
	slots := rt.opts.BatchSize
	if slots <= 0 {
		slots = len(rs) * n
	}
	slots = max(slots, n)
	obs := observerOf(pol)
	got := make([][]policy.Completion, len(rs)) // completions of each rollout's pending call
	arrived := make([]int, len(rs))
	waiting := make([]bool, len(rs)*n) // by request id
	taken, started, done := 0, 0, 0
	// send submits r's pending call, or counts r finished if it has none.
	send := func(i int) error {
		r := rs[i]
		if r.done {
			done++
			if rt.opts.Progress != nil {
				rt.opts.Progress(done, len(rs))
			}
			return nil
		}
		got[i], arrived[i] = make([]policy.Completion, n), 0
		for j, req := range rt.requests(r, obs) {
			if err := st.Submit(i*n+j, req); err != nil {
				return fmt.Errorf("harnesses: run: policy: %w", err)
			}
			waiting[i*n+j] = true
		}
		taken += n
		return nil
	}
	if rt.opts.Progress != nil {
		rt.opts.Progress(0, len(rs))
	}
	for {
		for started < len(rs) && taken+n <= slots {
			rt.advance(rs[started])
			if err := send(started); err != nil {
				return err
			}
			started++
		}
		if taken == 0 {
			return nil // every rollout started and finished
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
