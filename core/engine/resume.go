package engine

import (
	"encoding/binary"
	"encoding/json"
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
	stop := e.timeStore()
	seq, err := e.env.Store.AppendEvents(e.RunID, mustJSON(ev))
	stop()
	if err != nil {
		return err
	}
	ev.Seq = seq
	e.st.EventsSeq = seq
	e.noteLedger()
	e.broker.Publish(ev)
	return nil
}

// DefaultResumeEvery is how often a run writes a resume point when its
// Env does not say: often enough that a kill loses little work, rarely
// enough that writing the weights and optimizer state (three times the
// weights' size) stays a small share of the run's time.
const DefaultResumeEvery = 30 * time.Second

// saveDue reports whether the loop should write a resume point now:
// always at a phase boundary or the run's end (kept checkpoints and the
// summary must never be replayed from an older point), else when
// resumeEvery has passed since the last one.
func (e *Engine) saveDue(boundary bool) bool {
	if boundary || e.st.Done || e.resumeEvery < 0 {
		return true
	}
	return time.Since(e.lastSave) >= e.resumeEvery
}

// markConsistent records the state after a completed weight step, harness
// iteration or phase boundary: the point a cancelled run saves (see
// saveOnCancel). Work between two such points is all-or-nothing.
func (e *Engine) markConsistent() { e.snap = mustJSON(e.st) }

// saveOnCancel writes a resume point at the last consistent state when
// the run is interrupted between resume points (Ctrl-C), so an interrupt
// loses at most the step in flight. The model and optimizer still hold
// that state's values: a step changes them only in its last, uncancellable
// part (the operator's update), after which it completes.
func (e *Engine) saveOnCancel() error {
	if e.snap == nil {
		return nil
	}
	var st State
	if err := json.Unmarshal(e.snap, &st); err != nil {
		return fmt.Errorf("engine: restore the last consistent state: %w", err)
	}
	e.st = st
	return e.saveResume()
}

// persist stores the current weights and optimizer state as blobs if
// they changed since they were last stored, and checks that the weights
// are the ones the state names. Weight steps only hash the weights (a
// fraction of the cost of writing them, and of writing the optimizer
// state twice their size); resume points and kept checkpoints persist.
func (e *Engine) persist() error {
	if !e.dirty {
		return nil
	}
	defer e.timeStore()()
	w, err := e.putWeights()
	if err != nil {
		return err
	}
	if w != e.st.Weights {
		return fmt.Errorf("engine: the model's weights (%s) are not the state's (%s)", ShortHash(w), ShortHash(e.st.Weights))
	}
	if e.st.Optimizer, err = e.putOptimizer(); err != nil {
		return err
	}
	e.dirty = false
	return nil
}

// saveResume persists the weights and optimizer state, commits the cursor
// (which names their blobs), then deletes the previous resume point's
// blobs unless a kept checkpoint or the new cursor still uses them. A
// crash in between leaves garbage, never a dangling reference.
func (e *Engine) saveResume() error {
	if err := e.persist(); err != nil {
		return err
	}
	defer e.timeStore()()
	status := "running"
	if e.st.Paused {
		status = "paused"
	}
	if e.st.Done {
		status = "finished"
	}
	pins := ResumeBlobs(e.Cfg, e.st)
	var spent time.Duration // outside Run (New's first point) nothing is timed
	if !e.clock.IsZero() {
		now := time.Now()
		spent, e.clock = max(0, now.Sub(e.clock)), now
	}
	e.st.Servers = e.serverStatus()
	cursor := mustJSON(e.st)
	if err := e.env.Store.SetResumePoint(e.RunID, status, cursor, pins, spent); err != nil {
		return err
	}
	e.lastSave, e.snap = time.Now(), cursor // the cursor is also the last consistent state
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

// ResumeBlobs are the blobs a run's resume point at st needs: weights,
// optimizer state, the phase's starting weights, the tokenizer and, under
// LoRA, the frozen weights.
func ResumeBlobs(cfg Config, st State) []string {
	var out []string
	for _, h := range []string{st.Weights, st.Optimizer, st.PhaseWeights, cfg.Tokenizer, cfg.Base} {
		if h != "" {
			out = append(out, h)
		}
	}
	return out
}

// hashWeights names the model's current weights without storing them.
// "Weights" are what trains: the adapters alone under LoRA, whose frozen
// weights are the blob Cfg.Base.
func (e *Engine) hashWeights() string {
	defer e.timeStore()()
	return store.Hash(f32bytes(e.model.TrainableValues()))
}

func (e *Engine) putWeights() (string, error) {
	return e.env.Store.PutBlob(f32bytes(e.model.TrainableValues()))
}

func (e *Engine) loadWeights(hash string) error {
	b, err := e.env.Store.GetBlob(hash)
	if err != nil {
		return fmt.Errorf("engine: weights: %w", err)
	}
	if err := e.model.SetTrainableValues(bytesf32(b)); err != nil {
		return err
	}
	// Weights stored before whale checked every step may hold a NaN.
	if err := e.model.CheckTrainable(); err != nil {
		return fmt.Errorf("engine: run %s: the weights of its resume point (blob %s): %w", e.RunID, ShortHash(hash), err)
	}
	return nil
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
