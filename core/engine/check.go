package engine

import (
	"encoding/json"
	"fmt"

	"whale/core/store"
)

// CheckReferences adds to rep (from store.Check) what only the engine can
// see inside a run's resume point: the weights, optimizer and phase-start
// blobs it names must be intact, the checkpoints it names must exist, and
// it must not claim more events or samples than are stored.
func CheckReferences(rep *store.CheckReport) {
	for _, rc := range rep.RunChecks {
		if len(rc.Cursor) == 0 {
			continue
		}
		bad := func(format string, args ...any) { rep.Add("run "+rc.ID, fmt.Sprintf(format, args...), rc.ID) }
		var st State
		if err := json.Unmarshal(rc.Cursor, &st); err != nil {
			bad("its resume point does not decode: %v", err)
			continue
		}
		for _, b := range []struct{ what, hash string }{{"weights", st.Weights}, {"optimizer state", st.Optimizer}, {"phase-start weights", st.PhaseWeights}} {
			if b.hash != "" && !rep.BlobOK(b.hash) {
				bad("its resume point's %s (blob %s) are missing or damaged", b.what, ShortHash(b.hash))
			}
		}
		if st.BestCkpt != "" && !rep.HasCheckpoint(st.BestCkpt) {
			bad("its best checkpoint %s is missing", st.BestCkpt)
		}
		if st.EventsSeq > rc.LastEvent {
			bad("its resume point is at event %d, but only %d are stored", st.EventsSeq, rc.LastEvent)
		}
		if st.SamplesSeq > rc.LastSample {
			bad("its resume point is at sample %d, but only %d are stored", st.SamplesSeq, rc.LastSample)
		}
	}
}
