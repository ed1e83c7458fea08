package store

import (
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// CollectGarbage deletes every blob that no checkpoint references and that
// live does not claim (callers claim what their resume points use), and
// returns how many blobs and bytes it freed.
func (db *DB) CollectGarbage(live func(hash string) bool) (int, int64, error) {
	refs := map[string]bool{}
	var all []string
	err := db.view(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketCheckpoints).ForEach(func(k, v []byte) error {
			var c Checkpoint
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("store: checkpoint %s: %w", k, err)
			}
			for _, h := range c.Blobs {
				refs[h] = true
			}
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketBlobs).ForEach(func(k, _ []byte) error {
			all = append(all, string(k))
			return nil
		})
	})
	if err != nil {
		return 0, 0, err
	}
	n, freed := 0, int64(0)
	for _, h := range all {
		if refs[h] || live(h) {
			continue
		}
		b, err := db.GetBlob(h)
		if err != nil && !errors.Is(err, ErrNotFound) {
			// A damaged file blob is garbage too; its size is unknown.
			b = nil
		}
		if err := db.DeleteBlob(h); err != nil {
			return n, freed, err
		}
		n++
		freed += int64(len(b))
	}
	return n, freed, nil
}
