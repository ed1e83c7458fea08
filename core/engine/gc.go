package engine

import (
	"cmp"
	"slices"
	"strings"

	"whale/core/store"
)

// GCResult is what Workspace.GC dropped and freed.
type GCResult struct {
	// Dropped are the kept checkpoints dropped, run by run.
	Dropped []string `json:"checkpoints_dropped"`
	Blobs   int      `json:"blobs_deleted"`
	Bytes   int64    `json:"bytes_freed"`
}

// GC drops old kept checkpoints and then deletes every blob that no
// checkpoint and no run's resume point references. With keep ≥ 0 each run
// keeps its keep most recent kept checkpoints and its best-val one, and
// drops the others; with keep < 0 no checkpoint is dropped.
func (w *Workspace) GC(keep int) (GCResult, error) {
	res := GCResult{Dropped: []string{}}
	runs, err := w.db.Runs()
	if err != nil {
		return res, err
	}
	live := map[string]bool{}
	for _, r := range runs {
		cfg, st, err := DecodeRun(r)
		if err != nil {
			return res, err
		}
		for _, h := range ResumeBlobs(cfg, st) {
			live[h] = true
		}
		if keep < 0 {
			continue
		}
		ids, err := w.db.Checkpoints(r.ID + "/")
		if err != nil {
			return res, err
		}
		if ids, err = byRoundAndPhase(w.db, ids); err != nil {
			return res, err
		}
		for i, id := range ids {
			if i >= len(ids)-keep || id == st.BestCkpt {
				continue
			}
			if err := w.db.DeleteCheckpoint(id); err != nil {
				return res, err
			}
			res.Dropped = append(res.Dropped, id)
		}
	}
	res.Blobs, res.Bytes, err = w.db.CollectGarbage(func(h string) bool { return live[h] })
	return res, err
}

// byRoundAndPhase orders kept checkpoint ids as their runs made them: by
// round, then the weights phase before the harness phase of that round,
// read from their manifests. (Ids are RUN/NN-phase with at least two
// digits, so as text round 100 sorts before round 99.)
func byRoundAndPhase(db *store.DB, ids []string) ([]string, error) {
	type kept struct {
		id    string
		round int
		rank  int
	}
	ks := make([]kept, len(ids))
	for i, id := range ids {
		man, err := ReadCheckpoint(db, id)
		if err != nil {
			return nil, err
		}
		rank := 2
		switch man.Phase {
		case PhaseWeights:
			rank = 0
		case PhaseHarness:
			rank = 1
		}
		ks[i] = kept{id, man.Round, rank}
	}
	slices.SortStableFunc(ks, func(a, b kept) int {
		return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.rank, b.rank), strings.Compare(a.id, b.id))
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out, nil
}
