package store

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// SetRunConfig replaces a run's stored configuration (the engine's JSON),
// for a run resumed with changed settings. It refuses anything but JSON.
func (db *DB) SetRunConfig(id string, config json.RawMessage) error {
	if !json.Valid(config) {
		return fmt.Errorf("store: run %s: the new config is not JSON", id)
	}
	return db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, id)
		if err != nil {
			return err
		}
		return rb.Put(keyConfig, config)
	})
}
