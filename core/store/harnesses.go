package store

import (
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Harness is an archived harness source with its lineage.
type Harness struct {
	Hash     string `json:"hash"`
	Source   string `json:"source"`
	Parent   string `json:"parent,omitempty"`
	Proposer string `json:"proposer,omitempty"`
}

// PutHarness archives a harness under the given hash (the harness runtime's
// hash of normalised source). Storing the same hash again keeps the first
// record: lineage is the first time a source was seen.
func (db *DB) PutHarness(h Harness) error {
	if h.Hash == "" {
		return errors.New("store: put harness: empty hash")
	}
	rec, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("store: put harness %s: %w", h.Hash, err)
	}
	return db.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHarnesses)
		if b.Get([]byte(h.Hash)) != nil {
			return nil
		}
		return b.Put([]byte(h.Hash), rec)
	})
}

// GetHarness reads an archived harness.
func (db *DB) GetHarness(hash string) (Harness, error) {
	var h Harness
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketHarnesses).Get([]byte(hash))
		if v == nil {
			return fmt.Errorf("store: harness %s: %w", hash, ErrNotFound)
		}
		return json.Unmarshal(v, &h)
	})
	return h, err
}

// PutCandidate stores or replaces a run's record for a harness candidate.
func (db *DB) PutCandidate(run, hash string, rec []byte) error {
	return db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, run)
		if err != nil {
			return err
		}
		return rb.Bucket(bucketCandidates).Put([]byte(hash), rec)
	})
}

// Candidates calls fn for each candidate of a run, in hash order.
func (db *DB) Candidates(run string, fn func(hash string, rec []byte) error) error {
	return db.view(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, run)
		if err != nil {
			return err
		}
		return rb.Bucket(bucketCandidates).ForEach(func(k, v []byte) error { return fn(string(k), copyBytes(v)) })
	})
}
