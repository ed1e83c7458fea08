package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// ---- runs -------------------------------------------------------------------

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

// ---- sequenced records: events, samples, control ----------------------------

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

// AppendEvents stores events of a run in one transaction and returns the
// sequence number of the last one (sequences start at 1).
func (db *DB) AppendEvents(run string, events ...[]byte) (uint64, error) {
	return db.appendSeq(run, bucketEvents, events)
}

// Events calls fn for each event of run with sequence ≥ from, in order.
func (db *DB) Events(run string, from uint64, fn func(seq uint64, ev []byte) error) error {
	return db.scanSeq(run, bucketEvents, from, fn)
}

// AppendSamples stores rollout samples (trajectory, reward, kept or rejected
// and why, harness id, weights id — the caller's JSON).
func (db *DB) AppendSamples(run string, samples ...[]byte) (uint64, error) {
	return db.appendSeq(run, bucketSamples, samples)
}

// Samples calls fn for each sample of run with sequence ≥ from.
func (db *DB) Samples(run string, from uint64, fn func(seq uint64, s []byte) error) error {
	return db.scanSeq(run, bucketSamples, from, fn)
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

// ---- candidates -------------------------------------------------------------

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

// ---- harness archive --------------------------------------------------------

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

// ---- blobs ------------------------------------------------------------------

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

// ---- checkpoints ------------------------------------------------------------

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

// TruncateEvents deletes events of run with sequence > after, and rewinds
// the sequence, so a run resumed from a resume point taken at event after
// re-emits exactly what the interrupted run emitted past it.
func (db *DB) TruncateEvents(run string, after uint64) error {
	return db.truncateSeq(run, bucketEvents, after)
}

// TruncateSamples is TruncateEvents for samples.
func (db *DB) TruncateSamples(run string, after uint64) error {
	return db.truncateSeq(run, bucketSamples, after)
}

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
