package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout this code reads and writes. Older files are
// migrated on open by the steps in migrations; newer ones are refused.
const SchemaVersion = 1

// ErrNotFound is wrapped by every lookup of a missing run, harness, blob or
// checkpoint.
var ErrNotFound = errors.New("not found")

// ErrBlobInUse is wrapped when DeleteBlob refuses a blob that a kept
// checkpoint or a run's resume point still uses.
var ErrBlobInUse = errors.New("blob in use")

// DB is an open workspace.
type DB struct {
	bolt    *bolt.DB
	path    string
	blobDir string
	// stopServe and served end the goroutine that answers other
	// processes' backup requests (nil when read-only).
	stopServe chan struct{}
	served    chan struct{}

	// fault, when set (by tests of a failing disk), is asked before each
	// write whether it fails; see fault.go.
	fault func(op string) *Fault
	// inlineLimit is InlineBlobLimit, lowered by tests so that small
	// blobs take the file path.
	inlineLimit int
	// forCheck: opened by OpenForCheck, which keeps a damaged page tree
	// open and reports pageProblems (verify.go) instead of refusing it.
	forCheck     bool
	pageProblems []PageProblem
}

// migrations[v] upgrades a file from schema v to v+1.
var migrations = map[int]func(tx *bolt.Tx) error{}

// Open opens or creates the workspace at path. A second process opening the
// same file waits up to timeout for the first to close it.
func Open(path string, timeout time.Duration) (*DB, error) {
	return openWith(path, &bolt.Options{Timeout: timeout}, false)
}

// OpenReadOnly opens an existing workspace without writing to it (whale
// check, whale backup): several readers may hold it at once, and a
// damaged file is never made worse by a write whose free pages came from
// a damaged freelist.
func OpenReadOnly(path string, timeout time.Duration) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return openWith(path, &bolt.Options{Timeout: timeout, ReadOnly: true, PreLoadFreelist: true}, false)
}

// OpenForCheck is OpenReadOnly for whale check: a workspace whose page
// tree is damaged opens all the same, with the damage listed first in
// Check's report, and only what the damage spares is read.
func OpenForCheck(path string, timeout time.Duration) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return openWith(path, &bolt.Options{Timeout: timeout, ReadOnly: true, PreLoadFreelist: true}, true)
}

func openWith(path string, opts *bolt.Options, forCheck bool) (*DB, error) {
	db := &DB{path: path, blobDir: path + ".blobs", inlineLimit: InlineBlobLimit, forCheck: forCheck}
	if err := db.verifyBeforeOpen(opts); err != nil {
		return nil, err
	}
	// bbolt leaves the file open (and locked) when it panics on a damaged
	// page while opening: keep a handle to close it then.
	var file *os.File
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	err := db.guard(func() (err error) {
		db.bolt, err = bolt.Open(path, 0o644, opts)
		return err
	})
	if errors.Is(err, ErrDamaged) && file != nil {
		unlockFile(file)
		file.Close()
	}
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, inUseError{fmt.Sprintf("store: open %s: the workspace is in use by %s; stop it or use another --db", path, holder(path))}
	}
	if err != nil {
		if errors.Is(err, ErrDamaged) {
			return nil, err
		}
		if d := db.openError(err); d != nil {
			return nil, d
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.verifyAfterOpen(); err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		if forCheck && len(db.pageProblems) > 0 {
			return db, nil // Check reads what the damage spares
		}
		if err := db.view(db.checkSchema); err != nil {
			db.bolt.Close()
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		return db, nil
	}
	// Name ourselves as the holder, for a second process's error message.
	_ = os.WriteFile(path+".lock", []byte(fmt.Sprintf("pid %d (%s)", os.Getpid(), strings.Join(os.Args, " "))), 0o644)
	// A workspace that needs nothing is not written to on open.
	if err := db.view(db.checkSchema); err != nil {
		if errors.Is(err, ErrDamaged) {
			db.Close()
			return nil, err
		}
		if err := db.update(db.init); err != nil {
			db.Close()
			if errors.Is(err, ErrDamaged) {
				return nil, err
			}
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
	}
	db.stopServe, db.served = make(chan struct{}), make(chan struct{})
	go db.serveBackups(db.stopServe, db.served)
	return db, nil
}

// errNeedsInit says a workspace lacks a bucket or is at an older schema.
var errNeedsInit = errors.New("workspace needs initialising")

// checkSchema returns nil when every top-level bucket exists and the
// schema is this code's, errNeedsInit when init has work to do.
func (db *DB) checkSchema(tx *bolt.Tx) error {
	// The root holds the top-level buckets and nothing else: a root page
	// that points elsewhere (another bucket's leaf) must not be taken
	// for a new file and initialised over.
	c := tx.Cursor()
	if k, _ := c.First(); k == nil && tx.Size() > 4*int64(db.bolt.Info().PageSize) {
		// bbolt's new file is 4 pages (2 meta, free list, root); one
		// with more whose root is empty lost its tree.
		return db.damaged("the root is empty, but the file has %d pages in use", tx.Size()/int64(db.bolt.Info().PageSize))
	}
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		switch string(k) {
		case string(bucketMeta), string(bucketRuns), string(bucketHarnesses), string(bucketCheckpoints), string(bucketBlobs):
		default:
			return db.damaged("the root holds a key %q, which is none of a workspace's buckets", k[:min(len(k), 40)])
		}
	}
	for _, name := range [][]byte{bucketMeta, bucketRuns, bucketHarnesses, bucketCheckpoints, bucketBlobs} {
		if tx.Bucket(name) == nil {
			if k, _ := tx.Cursor().Seek(name); string(k) == string(name) {
				return db.damaged("the top-level key %s holds a value where its bucket belongs", name)
			}
			if holdsData(tx) {
				return db.damaged("bucket %s is missing from a workspace that holds data", name)
			}
			return errNeedsInit
		}
	}
	raw := tx.Bucket(bucketMeta).Get(keySchema)
	if raw == nil {
		if _, ok := migrations[0]; !ok && holdsData(tx) {
			return db.damaged("meta/schema is missing from a workspace that holds data")
		}
		return errNeedsInit
	}
	if len(raw) != 8 {
		return db.damaged("meta/schema holds %d bytes, want 8", len(raw))
	}
	switch v := binary.BigEndian.Uint64(raw); {
	case v > SchemaVersion:
		return fmt.Errorf("schema version %d is newer than this whale understands (%d); upgrade whale", v, SchemaVersion)
	case v < SchemaVersion:
		return errNeedsInit
	}
	return nil
}

func (db *DB) init(tx *bolt.Tx) error {
	for _, name := range [][]byte{bucketMeta, bucketRuns, bucketHarnesses, bucketCheckpoints, bucketBlobs} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bucketMeta)
	v := 0
	if raw := meta.Get(keySchema); raw != nil {
		if len(raw) != 8 {
			return fmt.Errorf("meta/schema holds %d bytes, want 8", len(raw))
		}
		v = int(binary.BigEndian.Uint64(raw))
	} else if isEmpty(tx) {
		v = SchemaVersion // a new file needs no migration
	} else if _, ok := migrations[0]; !ok {
		return db.damaged("meta/schema is missing from a workspace that holds data")
	}
	if v > SchemaVersion {
		return fmt.Errorf("schema version %d is newer than this whale understands (%d); upgrade whale", v, SchemaVersion)
	}
	for ; v < SchemaVersion; v++ {
		step, ok := migrations[v]
		if !ok {
			return fmt.Errorf("no migration from schema %d", v)
		}
		if err := step(tx); err != nil {
			return fmt.Errorf("migrate schema %d → %d: %w", v, v+1, err)
		}
	}
	return meta.Put(keySchema, u64(SchemaVersion))
}

// holdsData reports whether any of the data buckets that exist holds a
// key: a workspace in use, as against a new or half-initialised one.
func holdsData(tx *bolt.Tx) bool {
	for _, name := range [][]byte{bucketRuns, bucketHarnesses, bucketCheckpoints, bucketBlobs} {
		if b := tx.Bucket(name); b != nil {
			if k, _ := b.Cursor().First(); k != nil {
				return true
			}
		}
	}
	return false
}

func isEmpty(tx *bolt.Tx) bool {
	empty := true
	for _, name := range [][]byte{bucketRuns, bucketHarnesses, bucketCheckpoints, bucketBlobs} {
		if k, _ := tx.Bucket(name).Cursor().First(); k != nil {
			empty = false
		}
	}
	return empty
}

// Close closes the workspace.
func (db *DB) Close() error {
	if db.stopServe != nil {
		close(db.stopServe)
		<-db.served
		db.stopServe = nil
	}
	if !db.bolt.IsReadOnly() {
		os.Remove(db.path + ".lock")
	}
	return db.bolt.Close()
}

// holder describes the process that holds path open, from the note it
// left beside the database.
func holder(path string) string {
	b, err := os.ReadFile(path + ".lock")
	if err != nil || len(b) == 0 {
		return "another process"
	}
	return string(b)
}

// Path is the file the workspace lives in.
func (db *DB) Path() string { return db.path }

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func copyBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// Hash is the hex sha256 that names harnesses and blobs.
func Hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
