package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrInUse is wrapped when another process holds the workspace open.
var ErrInUse = errors.New("workspace in use")

type inUseError struct{ msg string }

func (e inUseError) Error() string { return e.msg }
func (e inUseError) Unwrap() error { return ErrInUse }

// BackupInfo says what Backup wrote.
type BackupInfo struct {
	DB        string `json:"db"`
	Out       string `json:"out"`
	Bytes     int64  `json:"bytes"`
	BlobFiles int    `json:"blob_files"`
	// Hot is true when the copy was made by the process that holds the
	// workspace open (a run writing to it), on request.
	Hot bool `json:"hot"`
}

// errBlobGone is a file blob deleted between the snapshot and its copy.
var errBlobGone = errors.New("a blob file went away during the copy")

// Backup writes a consistent copy of the workspace to out, which must not
// exist, and the blob files that copy references to out.blobs/. The copy
// is one read transaction (bbolt's WriteTo), so writers go on meanwhile;
// a blob file a writer deletes before it is copied (an old resume point's)
// starts the copy again from a newer snapshot.
func (db *DB) Backup(out string) (BackupInfo, error) {
	info := BackupInfo{DB: db.path, Out: out}
	if _, err := os.Stat(out); err == nil {
		return info, fmt.Errorf("store: backup: %s exists; name a new file", out)
	}
	var err error
	for range 5 {
		if info, err = db.backupOnce(out); !errors.Is(err, errBlobGone) {
			return info, err
		}
	}
	return info, fmt.Errorf("store: backup of %s: %w five times over; try again when the run is between steps", db.path, errBlobGone)
}

func (db *DB) backupOnce(out string) (BackupInfo, error) {
	info := BackupInfo{DB: db.path, Out: out}
	tmp := out + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return info, fmt.Errorf("store: backup: %w", err)
	}
	defer os.Remove(tmp)
	defer f.Close()
	blobDir := out + ".blobs"
	err = db.view(func(tx *bolt.Tx) error {
		n, err := tx.WriteTo(f)
		if err != nil {
			return fmt.Errorf("store: backup: write %s: %w", tmp, err)
		}
		info.Bytes = n
		// The blob files this snapshot references, copied while it is
		// open; a file already gone was deleted by a newer transaction.
		return tx.Bucket(bucketBlobs).ForEach(func(k, v []byte) error {
			if len(v) == 0 || v[0] != blobFile {
				return nil
			}
			if err := os.MkdirAll(blobDir, 0o755); err != nil {
				return fmt.Errorf("store: backup: %w", err)
			}
			b, err := os.ReadFile(filepath.Join(db.blobDir, string(k)))
			if errors.Is(err, os.ErrNotExist) {
				return errBlobGone
			}
			if err != nil {
				return fmt.Errorf("store: backup: blob %s: %w", k, err)
			}
			if Hash(b) != string(k) {
				return fmt.Errorf("store: backup: blob file %s is damaged: its sha256 does not match its name (run 'whale check --db %s')", filepath.Join(db.blobDir, string(k)), db.path)
			}
			if err := writeFileAtomic(filepath.Join(blobDir, string(k)), b); err != nil {
				return fmt.Errorf("store: backup: blob %s: %w", k, err)
			}
			info.BlobFiles++
			return nil
		})
	})
	if err != nil {
		return info, err
	}
	if err := f.Sync(); err != nil {
		return info, fmt.Errorf("store: backup: %w", err)
	}
	if err := f.Close(); err != nil {
		return info, fmt.Errorf("store: backup: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return info, fmt.Errorf("store: backup: %w", err)
	}
	return info, nil
}

// ---- hot backup on request --------------------------------------------------
//
// bbolt locks the file of a workspace open for writing, so another process
// (whale backup while whale run writes) cannot read it. The writer copies
// it instead, on request: the other process creates <db>.backup-request
// holding the output path; every process with the workspace open for
// writing looks for it a few times a second, runs Backup, and answers in
// <db>.backup-done.

const backupPoll = 200 * time.Millisecond

type backupAnswer struct {
	Info  BackupInfo `json:"info"`
	Error string     `json:"error,omitempty"`
}

// serveBackups answers backup requests until stop closes.
func (db *DB) serveBackups(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	req, answer := db.path+".backup-request", db.path+".backup-done"
	t := time.NewTicker(backupPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		out, err := os.ReadFile(req)
		if err != nil || len(out) == 0 {
			continue
		}
		var a backupAnswer
		a.Info, err = db.Backup(string(out))
		a.Info.Hot = true
		if err != nil {
			a.Error = err.Error()
		}
		b, _ := json.Marshal(a)
		os.Remove(req)
		_ = writeFileAtomic(answer, b)
	}
}

// RequestBackup asks the process holding the workspace at path to back it
// up to out, and waits up to timeout for the answer.
func RequestBackup(path, out string, timeout time.Duration) (BackupInfo, error) {
	req, answer := path+".backup-request", path+".backup-done"
	abs, err := filepath.Abs(out)
	if err != nil {
		return BackupInfo{}, err
	}
	os.Remove(answer)
	f, err := os.OpenFile(req, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("store: backup of %s: another backup is under way (%s exists): %w", path, req, err)
	}
	_, werr := io.WriteString(f, abs)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(req)
		return BackupInfo{}, fmt.Errorf("store: backup of %s: %w", path, werr)
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(backupPoll / 2) {
		b, err := os.ReadFile(answer)
		if err != nil {
			continue
		}
		os.Remove(answer)
		var a backupAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			return BackupInfo{}, fmt.Errorf("store: backup of %s: the answer %s: %w", path, answer, err)
		}
		if a.Error != "" {
			return a.Info, errors.New(a.Error)
		}
		return a.Info, nil
	}
	os.Remove(req)
	return BackupInfo{}, fmt.Errorf("store: backup of %s: the process holding it (%s) did not answer within %v", path, holder(path), timeout)
}
