package store

import (
	bolt "go.etcd.io/bbolt"
)

// checkSpared is Check for a file whose page tree the verifier found
// damaged (OpenForCheck): it reports each structural problem with the
// runs it affects, then reads only the buckets whose trees the damage
// spares, since bbolt's own walk of a damaged tree can overflow the stack
// or never end.
func (db *DB) checkSpared(rep *CheckReport) *CheckReport {
	top := map[string]bool{} // top-level buckets with damage in their own trees
	runsHit := map[string]bool{}
	whole := false // the root, a meta page or the free list: anything may be hit
	for _, p := range db.pageProblems {
		switch {
		case len(p.Bucket) == 0:
			whole = whole || !p.fallback
			rep.Add("pages", p.What, "*")
		case p.Bucket[0] == string(bucketRuns) && len(p.Bucket) >= 2:
			runsHit[p.Bucket[1]] = true
			rep.Add("run "+p.Bucket[1], "its pages are damaged: "+p.String(), p.Bucket[1])
		default:
			top[p.Bucket[0]] = true
			rep.Add("pages", p.String(), "*")
		}
	}
	if whole || top[string(bucketRuns)] {
		return rep
	}
	var runIDs []string
	if err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRuns)
		if b == nil {
			return db.damaged("bucket runs is missing")
		}
		return b.ForEachBucket(func(k []byte) error {
			runIDs = append(runIDs, string(k))
			return nil
		})
	}); err != nil {
		rep.Add("pages", "the list of runs cannot be read: "+cause(err), "*")
		return rep
	}
	if !top[string(bucketBlobs)] {
		db.checkBlobs(rep)
	}
	if !top[string(bucketCheckpoints)] && !top[string(bucketBlobs)] {
		db.checkCheckpoints(rep, runIDs)
	}
	for _, id := range runIDs {
		if !runsHit[id] {
			db.checkRun(rep, id)
		}
	}
	rep.Runs = len(runIDs)
	return rep
}
