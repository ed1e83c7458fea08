package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// InlineBlobLimit: blobs larger than this live in files beside the database
// (<db>.blobs/<hash>), keeping the bbolt file small and its transactions short.
const InlineBlobLimit = 1 << 20

const (
	blobInline byte = 0
	blobFile   byte = 1
)

// PutBlob stores bytes under their sha256 and returns the hash. Storing an
// existing blob is free. A file-backed blob is written and synced before its
// key commits, so a key never points at a missing or partial file.
func (db *DB) PutBlob(b []byte) (string, error) {
	hash := Hash(b)
	exists := false
	if err := db.view(func(tx *bolt.Tx) error {
		exists = tx.Bucket(bucketBlobs).Get([]byte(hash)) != nil
		return nil
	}); err != nil || exists {
		return hash, err
	}
	val := append([]byte{blobInline}, b...)
	if len(b) > db.inlineLimit {
		if err := os.MkdirAll(db.blobDir, 0o755); err != nil {
			return "", fmt.Errorf("store: blob %s: %w", hash, err)
		}
		if err := db.writeFileAtomic(filepath.Join(db.blobDir, hash), b); err != nil {
			return "", fmt.Errorf("store: blob %s: %w", hash, err)
		}
		val = []byte{blobFile}
	}
	return hash, db.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBlobs).Put([]byte(hash), val)
	})
}

// GetBlob returns a blob's bytes, checking file-backed blobs against their
// hash so that a damaged file is reported, never used.
func (db *DB) GetBlob(hash string) ([]byte, error) {
	var val []byte
	if err := db.view(func(tx *bolt.Tx) error {
		val = copyBytes(tx.Bucket(bucketBlobs).Get([]byte(hash)))
		return nil
	}); err != nil {
		return nil, err
	}
	if len(val) == 0 {
		return nil, fmt.Errorf("store: blob %s: %w", hash, ErrNotFound)
	}
	if val[0] == blobInline {
		return val[1:], nil
	}
	path := filepath.Join(db.blobDir, hash)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: blob %s: %w", hash, err)
	}
	if Hash(b) != hash {
		return nil, fmt.Errorf("store: blob file %s is damaged: its sha256 does not match its name", path)
	}
	return b, nil
}

// HasBlob reports whether a blob is stored.
func (db *DB) HasBlob(hash string) bool {
	ok := false
	_ = db.view(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketBlobs).Get([]byte(hash)) != nil
		return nil
	})
	return ok
}

// DeleteBlob removes a blob (and its file). Deleting a blob that a
// checkpoint references is refused.
func (db *DB) DeleteBlob(hash string) error {
	var val []byte
	err := db.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketCheckpoints).ForEach(func(k, v []byte) error {
			var c Checkpoint
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("store: checkpoint %s: %w", k, err)
			}
			for _, h := range c.Blobs {
				if h == hash {
					return fmt.Errorf("store: blob %s is referenced by checkpoint %s: %w", hash, k, ErrBlobInUse)
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketRuns).ForEachBucket(func(k []byte) error {
			pins := tx.Bucket(bucketRuns).Bucket(k).Get(keyPins)
			if pins == nil {
				return nil
			}
			var hs []string
			if err := json.Unmarshal(pins, &hs); err != nil {
				return fmt.Errorf("store: run %s: pins: %w", k, err)
			}
			for _, h := range hs {
				if h == hash {
					return fmt.Errorf("store: blob %s is used by the resume point of run %s: %w", hash, k, ErrBlobInUse)
				}
			}
			return nil
		}); err != nil {
			return err
		}
		b := tx.Bucket(bucketBlobs)
		val = copyBytes(b.Get([]byte(hash)))
		return b.Delete([]byte(hash))
	})
	if err == nil && len(val) > 0 && val[0] == blobFile {
		if rerr := os.Remove(filepath.Join(db.blobDir, hash)); rerr != nil && !os.IsNotExist(rerr) {
			return fmt.Errorf("store: delete blob file %s: %w", hash, rerr)
		}
	}
	return err
}

// writeFileAtomic writes b to path through a temporary file of its own, so
// that two writers of the same content-addressed blob (two runs of a bench
// starting from the same weights) never share a temporary name: each
// renames a complete file onto path, and the last rename wins with the same
// bytes. A failed write leaves no temporary file behind.
func writeFileAtomic(path string, b []byte) error {
	return (&DB{}).writeFileAtomic(path, b)
}

func (db *DB) writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if ft := db.injected("blob write"); ft != nil {
		f.Write(b[:len(b)/2]) // torn: part of the bytes reached the disk
		err = ft.Err
	} else {
		_, err = f.Write(b)
	}
	if err == nil {
		if ft := db.injected("blob sync"); ft != nil {
			err = ft.Err
		} else {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		ft := db.injected("blob rename")
		if ft == nil || ft.After {
			err = os.Rename(tmp, path)
		}
		if err == nil && ft != nil {
			err = ft.Err
		}
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
