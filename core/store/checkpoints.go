package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Checkpoint is a manifest (the engine's JSON: tensor → blob hash, harness
// id, optimizer state, round, step, metrics) plus the blobs it references.
type Checkpoint struct {
	ID       string          `json:"id"`
	Manifest json.RawMessage `json:"manifest"`
	Blobs    []string        `json:"blobs"`
}

// PutCheckpoint commits a checkpoint's manifest after checking that every
// blob it references is stored: a checkpoint exists only once its manifest
// commits, and never refers to missing data.
func (db *DB) PutCheckpoint(c Checkpoint) error {
	rec, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("store: checkpoint %s: %w", c.ID, err)
	}
	return db.update(func(tx *bolt.Tx) error {
		blobs := tx.Bucket(bucketBlobs)
		for _, h := range c.Blobs {
			if blobs.Get([]byte(h)) == nil {
				return fmt.Errorf("store: checkpoint %s references blob %s, which is not stored", c.ID, h)
			}
		}
		return tx.Bucket(bucketCheckpoints).Put([]byte(c.ID), rec)
	})
}

// GetCheckpoint reads a checkpoint.
func (db *DB) GetCheckpoint(id string) (Checkpoint, error) {
	var c Checkpoint
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCheckpoints).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("store: checkpoint %s: %w", id, ErrNotFound)
		}
		return json.Unmarshal(v, &c)
	})
	return c, err
}

// Checkpoints lists checkpoint ids with the given prefix, in order.
func (db *DB) Checkpoints(prefix string) ([]string, error) {
	var out []string
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketCheckpoints).Cursor()
		for k, _ := c.Seek([]byte(prefix)); k != nil && len(k) >= len(prefix) && string(k[:len(prefix)]) == prefix; k, _ = c.Next() {
			out = append(out, string(k))
		}
		return nil
	})
	return out, err
}

// DeleteCheckpoint removes a kept checkpoint's manifest (its blobs stay
// until CollectGarbage finds them unreferenced).
func (db *DB) DeleteCheckpoint(id string) error {
	return db.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketCheckpoints)
		if b.Get([]byte(id)) == nil {
			return fmt.Errorf("store: checkpoint %s: %w", id, ErrNotFound)
		}
		return b.Delete([]byte(id))
	})
}
