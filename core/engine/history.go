package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	"whale/core/store"
)

// errEnough stops a store scan once a caller's limit is reached.
var errEnough = errors.New("engine: enough events read")

// StoredEvents reads run's stored events with a sequence of at least
// from, at most limit of them (limit ≤ 0: all), in order. Each Event
// carries its store sequence (the engine stores an event before it knows
// its number). Nothing is held open when it returns, so a reader that is
// slow with what it got never keeps a store transaction open.
func StoredEvents(db *store.DB, run string, from uint64, limit int) ([]Event, error) {
	var out []Event
	err := db.Events(run, from, func(seq uint64, rec []byte) error {
		var ev Event
		if err := json.Unmarshal(rec, &ev); err != nil {
			return fmt.Errorf("engine: run %s: stored event %d: %w", run, seq, err)
		}
		if ev.Seq == 0 {
			ev.Seq = seq
		}
		out = append(out, ev)
		if limit > 0 && len(out) >= limit {
			return errEnough
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, err
}
