package tui

import (
	"encoding/json"
	"fmt"
	"slices"

	"whale/core/engine"
	"whale/core/store"
)

// Sample is one stored rollout (the engine's record) with its sequence
// number in the store.
type Sample struct {
	Seq uint64 `json:"-"`
	engine.SampleRecord
}

// MaxSamples bounds how many of the newest samples the pane holds.
const MaxSamples = 2000

// StoreSamples returns a loader of run's samples from db, newest first.
func StoreSamples(db *store.DB, run string) func() ([]Sample, error) {
	return SampleLoader(run, func(fn func(seq uint64, rec []byte) error) error { return db.Samples(run, 0, fn) })
}

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

func (m *Model) visibleSamples() []Sample {
	var out []Sample
	for _, s := range m.samples {
		if s.Kept && !m.showKept {
			continue
		}
		if m.kindFilter != "" && s.Why != m.kindFilter {
			continue
		}
		// "round 2" (or "r2") narrows to a cycle, a hash prefix to a harness.
		if !matches(m.filter[paneSamples], s.Why, s.Harness, s.Trajectory.TaskID,
			fmt.Sprintf("round %d", s.Round), fmt.Sprintf("r%d ", s.Round)) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// sampleKinds lists the failure kinds present, sorted.
func (m *Model) sampleKinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range m.samples {
		if !s.Kept && !seen[s.Why] {
			seen[s.Why] = true
			out = append(out, s.Why)
		}
	}
	slices.Sort(out)
	return out
}

// nextKind cycles "" (all) → each kind → "".
func nextKind(kinds []string, cur string) string {
	if cur == "" {
		if len(kinds) == 0 {
			return ""
		}
		return kinds[0]
	}
	i := slices.Index(kinds, cur)
	if i < 0 || i+1 >= len(kinds) {
		return ""
	}
	return kinds[i+1]
}

func (m *Model) clampSamples() {
	n := len(m.visibleSamples())
	m.sampleSel = min(m.sampleSel, max(0, n-1))
	if n == 0 {
		m.detail = false
	}
}
