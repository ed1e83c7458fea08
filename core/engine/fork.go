package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"whale/core/model"
	"whale/core/store"
	"whale/kernels"
)

// ForkOrigin says where a forked run came from: the payload of EvForked,
// the first event of a run started from another run's kept checkpoint
// (Fork).
type ForkOrigin struct {
	Checkpoint string `json:"checkpoint"`
	Run        string `json:"run"`
	Round      int    `json:"round"`
	Phase      Phase  `json:"phase"`
	Weights    string `json:"weights"`
	Harness    string `json:"harness"`
}

// ForkPlan reads what a run started from checkpoint ckptID needs: the
// configuration of the run that kept it, with the checkpoint's harness
// source as the starting harness, and the checkpoint's manifest (whose
// Weights blob holds the starting weights). The caller opens the domain
// the configuration names (and its data seed) before calling Fork.
func ForkPlan(db *store.DB, ckptID string) (Config, CheckpointManifest, error) {
	man, err := ReadCheckpoint(db, ckptID)
	if err != nil {
		return Config{}, man, fmt.Errorf("engine: fork %s: %w", ckptID, err)
	}
	r, err := db.GetRun(man.Run)
	if err != nil {
		return Config{}, man, fmt.Errorf("engine: fork %s: the run that kept it: %w", ckptID, err)
	}
	cfg, err := DecodeConfig(man.Run, r.Config)
	if err != nil {
		return Config{}, man, fmt.Errorf("engine: fork %s: %w", ckptID, err)
	}
	h, err := db.GetHarness(man.Harness)
	if err != nil {
		return Config{}, man, fmt.Errorf("engine: fork %s: harness %s: %w", ckptID, man.Harness, err)
	}
	// The source, not the built-in name it may have come from: the
	// checkpoint's harness is usually a searched one with no name.
	cfg.Harness = h.Source
	m := man.Config
	cfg.Model = &m
	cfg.Start = &StartModel{Kind: StartCheckpoint, Name: ckptID, SHA256: man.Weights}
	if err := cfg.Validate(); err != nil {
		return Config{}, man, fmt.Errorf("engine: fork %s: %w", ckptID, err)
	}
	return cfg, man, nil
}

// Fork starts a new run, newRunID, from kept checkpoint ckptID: the
// checkpoint's weights and harness, the configuration of the run that kept
// it otherwise (same seed, same budget; a fresh optimizer state, as any new
// run has). The run it came from is not touched. env.Domain must be the
// domain ForkPlan's configuration names; env.Bundle may be nil (the model
// is then built on be), else its model must have the checkpoint's model
// configuration and its weights are overwritten. The run renders with the
// tokenizer the checkpoint's run stored. The origin is the new run's first event
// (EvForked), before run_started.
func Fork(env Env, be kernels.Backend, ckptID, newRunID string) (*Engine, error) {
	if env.Store == nil {
		return nil, errors.New("engine: fork: Env needs a store")
	}
	cfg, man, err := ForkPlan(env.Store, ckptID)
	if err != nil {
		return nil, err
	}
	var m *model.Model
	if env.Bundle == nil {
		if m, err = model.New(man.Config, be, 0); err != nil {
			return nil, fmt.Errorf("engine: fork %s: %w", ckptID, err)
		}
	} else if m = env.Bundle.Model; m.Config != man.Config {
		return nil, fmt.Errorf("engine: fork %s: the environment's model configuration differs from the checkpoint's", ckptID)
	}
	if err := checkpointWeights(env.Store, m, man); err != nil {
		return nil, fmt.Errorf("engine: fork %s: %w", ckptID, err)
	}
	e, err := newRun(cfg, env, m, nil, newRunID)
	if err != nil {
		return nil, fmt.Errorf("engine: fork %s: %w", ckptID, err)
	}
	// Both are content hashes: a mismatch means the round trip through
	// the model or the harness loader changed what the checkpoint holds.
	if e.st.Weights != man.Weights {
		return nil, fmt.Errorf("engine: fork %s: starting weights %s differ from the checkpoint's %s", ckptID, ShortHash(e.st.Weights), ShortHash(man.Weights))
	}
	if inc := e.st.Archive.Incumbent; inc != man.Harness {
		return nil, fmt.Errorf("engine: fork %s: starting harness %s differs from the checkpoint's %s", ckptID, ShortHash(inc), ShortHash(man.Harness))
	}
	// The starting weights are the other run's checkpoint blob; when this
	// run's first resume point moves on, the store refuses to delete it
	// (ErrBlobInUse), so nothing here needs to protect it.
	o := ForkOrigin{Checkpoint: ckptID, Run: man.Run, Round: man.Round, Phase: man.Phase, Weights: man.Weights, Harness: man.Harness}
	if err := e.emit(EvForked, mustJSON(o)); err != nil {
		return nil, err
	}
	// The resume point New wrote predates the event: move it past, or a
	// fork stopped before its next resume point would drop its origin on
	// resume (events after the resume point are dropped).
	if err := e.saveResume(); err != nil {
		return nil, err
	}
	return e, nil
}

// ForkedFrom returns where run came from, or nil when it was not forked.
// The origin is the run's first event, so only that one is read.
func ForkedFrom(db *store.DB, run string) (*ForkOrigin, error) {
	var o *ForkOrigin
	stop := errors.New("stop")
	err := db.Events(run, 0, func(seq uint64, b []byte) error {
		var ev Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return fmt.Errorf("engine: run %s: event %d: %w", run, seq, err)
		}
		if ev.Kind == EvForked {
			o = new(ForkOrigin)
			if err := json.Unmarshal(ev.Data, o); err != nil {
				return fmt.Errorf("engine: run %s: event %d (%s): %w", run, seq, ev.Kind, err)
			}
		}
		return stop
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, err
	}
	return o, nil
}

// ShortHash is the first 12 characters of a hash, as reports print it.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
