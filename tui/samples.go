package tui

import (
	"encoding/json"
	"fmt"
	"slices"

	"whale/core/engine"
)

// Sample is one stored rollout (the engine's record) with its sequence
// number in the store.
type Sample struct {
	Seq uint64 `json:"-"`
	engine.SampleRecord
}

// MaxSamples bounds how many of the newest samples the pane holds.
const MaxSamples = 2000

// SampleLoader returns a loader of run's samples, newest first, from scan,
// which calls fn with each stored sample record in order (the store's, or
// the records the process holding the store sent).
func SampleLoader(run string, scan func(fn func(seq uint64, rec []byte) error) error) func() ([]Sample, error) {
	return func() ([]Sample, error) {
		var out []Sample
		err := scan(func(seq uint64, rec []byte) error {
			var s Sample
			if err := json.Unmarshal(rec, &s); err != nil {
				return fmt.Errorf("tui: sample %d of run %s: %w", seq, run, err)
			}
			s.Seq = seq
			out = append(out, s)
			if len(out) > 2*MaxSamples {
				out = append(out[:0:0], out[len(out)-MaxSamples:]...)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("tui: reading samples of run %s: %w", run, err)
		}
		if len(out) > MaxSamples {
			out = out[len(out)-MaxSamples:]
		}
		slices.Reverse(out)
		return out, nil
	}
}
