package store

// AppendSamples stores rollout samples (trajectory, reward, kept or rejected
// and why, harness id, weights id — the caller's JSON).
func (db *DB) AppendSamples(run string, samples ...[]byte) (uint64, error) {
	return db.appendSeq(run, bucketSamples, samples)
}

// Samples calls fn for each sample of run with sequence ≥ from.
func (db *DB) Samples(run string, from uint64, fn func(seq uint64, s []byte) error) error {
	return db.scanSeq(run, bucketSamples, from, fn)
}

// TruncateSamples is TruncateEvents for samples.
func (db *DB) TruncateSamples(run string, after uint64) error {
	return db.truncateSeq(run, bucketSamples, after)
}
