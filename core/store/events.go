package store

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// A run's sequenced records (events, samples, control commands) live in
// buckets keyed by big-endian sequence numbers, so byte order is append
// order; samples.go uses the same three helpers.

// appendSeq appends recs to a run's sequenced bucket in one transaction
// and returns the last one's sequence number.
func (db *DB) appendSeq(run string, bucket []byte, recs [][]byte) (uint64, error) {
	var last uint64
	err := db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, run)
		if err != nil {
			return err
		}
		b := rb.Bucket(bucket)
		for _, r := range recs {
			seq, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(u64(seq), r); err != nil {
				return err
			}
			last = seq
		}
		return nil
	})
	return last, err
}

// scanSeq calls fn for each record of a run's sequenced bucket with
// sequence ≥ from, in order.
func (db *DB) scanSeq(run string, bucket []byte, from uint64, fn func(seq uint64, rec []byte) error) error {
	return db.view(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, run)
		if err != nil {
			return err
		}
		c := rb.Bucket(bucket).Cursor()
		for k, v := c.Seek(u64(from)); k != nil; k, v = c.Next() {
			if len(k) != 8 {
				return db.damaged("run %s: a key of %d bytes among its %s, where sequence numbers have 8", run, len(k), bucket)
			}
			if err := fn(binary.BigEndian.Uint64(k), copyBytes(v)); err != nil {
				return err
			}
		}
		return nil
	})
}

// truncateSeq deletes the records with sequence > after and rewinds the
// bucket's sequence to after.
func (db *DB) truncateSeq(run string, bucket []byte, after uint64) error {
	return db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, run)
		if err != nil {
			return err
		}
		b := rb.Bucket(bucket)
		c := b.Cursor()
		for k, _ := c.Seek(u64(after + 1)); k != nil; k, _ = c.Seek(u64(after + 1)) {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return b.SetSequence(after)
	})
}

// AppendEvents stores events of a run in one transaction and returns the
// sequence number of the last one (sequences start at 1).
func (db *DB) AppendEvents(run string, events ...[]byte) (uint64, error) {
	return db.appendSeq(run, bucketEvents, events)
}

// Events calls fn for each event of run with sequence ≥ from, in order.
func (db *DB) Events(run string, from uint64, fn func(seq uint64, ev []byte) error) error {
	return db.scanSeq(run, bucketEvents, from, fn)
}

// TruncateEvents deletes events of run with sequence > after, and rewinds
// the sequence, so a run resumed from a resume point taken at event after
// re-emits exactly what the interrupted run emitted past it.
func (db *DB) TruncateEvents(run string, after uint64) error {
	return db.truncateSeq(run, bucketEvents, after)
}

// AppendControl journals a control command (force, pause, prune) with the
// step it took effect at, so that a resumed run replays it.
func (db *DB) AppendControl(run string, cmd []byte) (uint64, error) {
	return db.appendSeq(run, bucketControl, [][]byte{cmd})
}

// Control calls fn for each journaled command of run, in order.
func (db *DB) Control(run string, fn func(seq uint64, cmd []byte) error) error {
	return db.scanSeq(run, bucketControl, 0, fn)
}
