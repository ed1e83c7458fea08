package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Run is a run's stored record. Config and Cursor are the engine's own JSON.
type Run struct {
	ID      string          `json:"id"`
	Config  json.RawMessage `json:"config"`
	Status  string          `json:"status"`
	Cursor  json.RawMessage `json:"cursor,omitempty"`
	Created time.Time       `json:"created"`
	// Compute is the time spent on the work behind the current resume
	// point, summed over every process that ran the run. Work lost to a
	// crash (after the last resume point) is not in it; its redo is.
	Compute time.Duration `json:"compute_ns"`
	// Labels are what callers noted of the run (SetRunLabel); nil for
	// none.
	Labels map[string]string `json:"labels,omitempty"`
}

// CreateRun stores a new run with status "created". The id must be new.
func (db *DB) CreateRun(id string, config json.RawMessage, now time.Time) error {
	if id == "" {
		return errors.New("store: create run: empty id")
	}
	return db.update(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bucketRuns)
		if runs.Bucket([]byte(id)) != nil {
			return fmt.Errorf("store: run %s already exists", id)
		}
		rb, err := runs.CreateBucket([]byte(id))
		if err != nil {
			return fmt.Errorf("store: create run %s: %w", id, err)
		}
		for _, sub := range [][]byte{bucketEvents, bucketCandidates, bucketSamples, bucketControl} {
			if _, err := rb.CreateBucket(sub); err != nil {
				return fmt.Errorf("store: create run %s: %w", id, err)
			}
		}
		ts, _ := now.UTC().MarshalText()
		for k, v := range map[string][]byte{string(keyConfig): config, string(keyStatus): []byte("created"), string(keyCreated): ts, string(keyCompute): []byte("0")} {
			if err := rb.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
}

func runBucket(tx *bolt.Tx, id string) (*bolt.Bucket, error) {
	rb := tx.Bucket(bucketRuns).Bucket([]byte(id))
	if rb == nil {
		return nil, fmt.Errorf("store: run %s: %w", id, ErrNotFound)
	}
	return rb, nil
}

// GetRun reads a run's record.
func (db *DB) GetRun(id string) (Run, error) {
	var r Run
	err := db.view(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, id)
		if err != nil {
			return err
		}
		r = readRun(id, rb)
		return nil
	})
	return r, err
}

func readRun(id string, rb *bolt.Bucket) Run {
	r := Run{ID: id, Config: copyBytes(rb.Get(keyConfig)), Status: string(rb.Get(keyStatus)), Cursor: copyBytes(rb.Get(keyCursor))}
	_ = r.Created.UnmarshalText(rb.Get(keyCreated))
	r.Compute = readCompute(rb)
	// Labels that are not JSON read as none; Check reports them.
	_ = json.Unmarshal(rb.Get(keyLabels), &r.Labels)
	return r
}

// SetRunLabel sets one label of a run (see Run.Labels), keeping the others.
func (db *DB) SetRunLabel(id, key, value string) error {
	if key == "" {
		return fmt.Errorf("store: run %s: empty label key", id)
	}
	return db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, id)
		if err != nil {
			return err
		}
		labels := map[string]string{}
		if raw := rb.Get(keyLabels); raw != nil {
			if err := json.Unmarshal(raw, &labels); err != nil {
				return fmt.Errorf("store: run %s: its labels are not a JSON object of strings: %w", id, err)
			}
		}
		labels[key] = value
		b, err := json.Marshal(labels)
		if err != nil {
			return err
		}
		return rb.Put(keyLabels, b)
	})
}

// Runs lists every run, in id order.
func (db *DB) Runs() ([]Run, error) {
	var out []Run
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).ForEachBucket(func(k []byte) error {
			out = append(out, readRun(string(k), tx.Bucket(bucketRuns).Bucket(k)))
			return nil
		})
	})
	return out, err
}

// SetRunState sets a run's status and resume cursor in one transaction, so a
// resume point is never half written. A nil cursor leaves the cursor as is.
func (db *DB) SetRunState(id, status string, cursor json.RawMessage) error {
	return db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, id)
		if err != nil {
			return err
		}
		if err := rb.Put(keyStatus, []byte(status)); err != nil {
			return err
		}
		if cursor != nil {
			return rb.Put(keyCursor, cursor)
		}
		return nil
	})
}

// readCompute reads a run's compute time; a run created before whale kept
// one reads 0, and keeps reading 0: its earlier work was never timed, so a
// partial sum would understate it.
func readCompute(rb *bolt.Bucket) time.Duration {
	n, err := strconv.ParseInt(string(rb.Get(keyCompute)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n)
}

// SetResumePoint is SetRunState for a resume point that uses blobs: it also
// pins them to the run in the same transaction, so DeleteBlob refuses them
// while this resume point stands, whichever run asks (content-addressed
// blobs are shared between runs that start from the same weights). spent,
// the time the work since the previous resume point took, is added to the
// run's compute time in the same transaction.
func (db *DB) SetResumePoint(id, status string, cursor json.RawMessage, blobs []string, spent time.Duration) error {
	if spent < 0 {
		return fmt.Errorf("store: run %s: resume point spent %v, want ≥ 0", id, spent)
	}
	pins, err := json.Marshal(blobs)
	if err != nil {
		return fmt.Errorf("store: run %s: pins: %w", id, err)
	}
	return db.update(func(tx *bolt.Tx) error {
		rb, err := runBucket(tx, id)
		if err != nil {
			return err
		}
		stored := tx.Bucket(bucketBlobs)
		for _, h := range blobs {
			if stored.Get([]byte(h)) == nil {
				return fmt.Errorf("store: run %s: resume point pins blob %s, which is not stored", id, h)
			}
		}
		for k, v := range map[string][]byte{string(keyStatus): []byte(status), string(keyCursor): cursor, string(keyPins): pins} {
			if err := rb.Put([]byte(k), v); err != nil {
				return err
			}
		}
		if rb.Get(keyCompute) == nil {
			return nil // created before compute time was kept
		}
		return rb.Put(keyCompute, []byte(strconv.FormatInt(int64(readCompute(rb)+spent), 10)))
	})
}
