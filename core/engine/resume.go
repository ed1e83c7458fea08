package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"whale/core/model"
	"whale/core/store"
)

// emit stores an event and publishes it. Its sequence number is the
// store's, so a resumed run (which first drops events past its resume
// point) numbers events exactly as the uninterrupted run did.
func (e *Engine) emit(kind string, data []byte) error {
	ev := Event{Kind: kind, Phase: e.st.Phase, Round: e.st.Round, Step: e.st.Step, Iteration: e.st.Iteration,
		Rollouts: e.st.Ledger.Episodes(), Calls: e.st.Ledger.Budgeted(), Data: data}
	seq, err := e.env.Store.AppendEvents(e.RunID, mustJSON(ev))
	if err != nil {
		return err
	}
	ev.Seq = seq
	e.st.EventsSeq = seq
	e.broker.Publish(ev)
	return nil
}

// saveResume commits the cursor (which names the weights and optimizer
// blobs, already stored), then deletes the previous resume point's blobs
// unless a kept checkpoint or the new cursor still uses them. A crash in
// between leaves garbage, never a dangling reference.
func (e *Engine) saveResume() error {
	status := "running"
	if e.st.Paused {
		status = "paused"
	}
	if e.st.Done {
		status = "finished"
	}
	var pins []string
	for _, h := range []string{e.st.Weights, e.st.Optimizer, e.st.PhaseWeights} {
		if h != "" {
			pins = append(pins, h)
		}
	}
	var spent time.Duration // outside Run (New's first point) nothing is timed
	if !e.clock.IsZero() {
		now := time.Now()
		spent, e.clock = max(0, now.Sub(e.clock)), now
	}
	if err := e.env.Store.SetResumePoint(e.RunID, status, mustJSON(e.st), pins, spent); err != nil {
		return err
	}
	old := e.saved
	e.saved = [3]string{e.st.Weights, e.st.Optimizer, e.st.PhaseWeights}
	for _, h := range old {
		if h == "" || e.st.Kept[h] || h == e.st.Weights || h == e.st.Optimizer || h == e.st.PhaseWeights {
			continue
		}
		// Another run may share the blob (the same starting weights):
		// then it stays, pinned by that run.
		if err := e.env.Store.DeleteBlob(h); err != nil && !errors.Is(err, store.ErrBlobInUse) {
			return fmt.Errorf("engine: drop old resume blob: %w", err)
		}
	}
	return nil
}

func (e *Engine) putWeights() (string, error) {
	return e.env.Store.PutBlob(f32bytes(e.env.Model.ParamValues()))
}

func (e *Engine) loadWeights(hash string) error {
	b, err := e.env.Store.GetBlob(hash)
	if err != nil {
		return fmt.Errorf("engine: weights: %w", err)
	}
	return e.env.Model.SetParamValues(bytesf32(b))
}

// The optimizer blob is the step count (8 bytes) then M and V.
func (e *Engine) putOptimizer() (string, error) {
	s := e.trainer.State()
	b := binary.LittleEndian.AppendUint64(nil, uint64(s.Step))
	return e.env.Store.PutBlob(append(b, f32bytes(s.M, s.V)...))
}

func (e *Engine) loadOptimizer(hash string) error {
	b, err := e.env.Store.GetBlob(hash)
	if err != nil {
		return fmt.Errorf("engine: optimizer state: %w", err)
	}
	if len(b) < 8 || (len(b)-8)%8 != 0 {
		return fmt.Errorf("engine: optimizer blob %s has %d bytes: not step + M + V", hash, len(b))
	}
	mv := bytesf32(b[8:])
	half := len(mv) / 2
	return e.trainer.SetState(model.OptimizerState{Step: int(binary.LittleEndian.Uint64(b)), M: mv[:half], V: mv[half:]})
}
