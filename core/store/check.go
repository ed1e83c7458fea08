package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Problem is one thing whale check found wrong.
type Problem struct {
	// Where names the damaged thing: "pages", "run R", "blob H",
	// "checkpoint C", "harnesses".
	Where string `json:"where"`
	What  string `json:"what"`
	// Runs are the runs it affects; "*" when it cannot say which.
	Runs []string `json:"runs,omitempty"`
}

// RunCheck is what Check read of one run, for checks of the references
// inside its resume point (the engine's, see engine.CheckReferences).
type RunCheck struct {
	ID     string          `json:"id"`
	Cursor json.RawMessage `json:"-"`
	// LastEvent and LastSample are the highest stored sequence numbers.
	LastEvent  uint64 `json:"last_event"`
	LastSample uint64 `json:"last_sample"`
}

// CheckReport is the result of Check.
type CheckReport struct {
	Path        string     `json:"db"`
	Runs        int        `json:"runs"`
	Events      int        `json:"events"`
	Blobs       int        `json:"blobs"`
	Checkpoints int        `json:"checkpoints"`
	Problems    []Problem  `json:"problems"`
	RunChecks   []RunCheck `json:"-"`

	blobOK map[string]bool // blob hash → intact
	ckpts  map[string]bool // checkpoint ids stored
}

// Add records a problem.
func (r *CheckReport) Add(where, what string, runs ...string) {
	r.Problems = append(r.Problems, Problem{Where: where, What: what, Runs: runs})
}

// BlobOK reports whether blob h is stored and intact.
func (r *CheckReport) BlobOK(h string) bool { return r.blobOK[h] }

// HasCheckpoint reports whether checkpoint id is stored.
func (r *CheckReport) HasCheckpoint(id string) bool { return r.ckpts[id] }

// Affected lists the runs some problem affects, sorted; "*" means every
// run may be.
func (r *CheckReport) Affected() []string {
	var out []string
	for _, p := range r.Problems {
		for _, id := range p.Runs {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Check reads the whole workspace: every page reachable from the root
// (each run's buckets apart, so damage in one run does not hide the
// others), then bbolt's own consistency check of the page tree and free
// list, every blob against its hash (files beside the database too), every
// checkpoint's blobs, every run's record, the JSON of its events, samples
// and commands, and the blobs its resume point pins. It never writes. Open
// the store with OpenReadOnly.
func (db *DB) Check() *CheckReport {
	rep := &CheckReport{Path: db.path, blobOK: map[string]bool{}, ckpts: map[string]bool{}}
	for _, p := range db.pageProblems {
		if !p.fallback {
			return db.checkSpared(rep)
		}
	}
	for _, p := range db.pageProblems {
		rep.Add("pages", p.What, "*")
	}
	var runIDs []string
	walked := true
	if err := db.view(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			if string(name) == string(bucketRuns) {
				return b.ForEachBucket(func(k []byte) error {
					runIDs = append(runIDs, string(k))
					return nil
				})
			}
			return nil
		})
	}); err != nil {
		rep.Add("pages", fmt.Sprintf("the list of runs cannot be read: %v", cause(err)), "*")
		walked = false
	}
	for _, id := range runIDs {
		if err := db.view(func(tx *bolt.Tx) error { return walk(tx.Bucket(bucketRuns).Bucket([]byte(id))) }); err != nil {
			rep.Add("run "+id, "its pages are damaged: "+cause(err), id)
			walked = false
		}
	}
	for _, name := range [][]byte{bucketMeta, bucketHarnesses, bucketCheckpoints, bucketBlobs} {
		if err := db.view(func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			if b == nil {
				return db.damaged("bucket %s is missing", name)
			}
			return walk(b)
		}); err != nil {
			rep.Add(string(name), "its pages are damaged: "+cause(err), "*")
			walked = false
		}
	}
	// bbolt's check runs in a goroutine of its own, where a panic on a
	// bad page would end the process: it runs only over a tree that the
	// guarded walk above read whole, with every page header it asserts on
	// checked first.
	if walked {
		if err := db.checkHeaders(); err != nil {
			rep.Add("pages", cause(err), "*")
			walked = false
		}
	}
	if walked {
		if err := db.view(func(tx *bolt.Tx) error {
			var errs []string
			for err := range tx.Check() {
				errs = append(errs, err.Error())
			}
			if len(errs) > 0 {
				return errors.New(strings.Join(errs[:min(len(errs), 5)], "; "))
			}
			return nil
		}); err != nil {
			rep.Add("pages", "bbolt's page check failed: "+cause(err), "*")
		}
	}
	db.checkBlobs(rep)
	db.checkCheckpoints(rep, runIDs)
	for _, id := range runIDs {
		db.checkRun(rep, id)
	}
	rep.Runs = len(runIDs)
	return rep
}

// walk reads every key and value under b, nested buckets included, so
// that every page and overflow page of the tree is parsed once.
func walk(b *bolt.Bucket) error {
	if b == nil {
		return errors.New("bucket missing")
	}
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			if c := b.Bucket(k); c != nil {
				return walk(c)
			}
		}
		crc32.ChecksumIEEE(k)
		crc32.ChecksumIEEE(v)
		return nil
	})
}

// cause is an error's text without the advice a DamagedError carries
// (whale check is what it advises).
func cause(err error) string {
	var de *DamagedError
	if errors.As(err, &de) {
		return de.Cause
	}
	return err.Error()
}

func (db *DB) checkBlobs(rep *CheckReport) {
	type blob struct {
		hash string
		val  []byte
	}
	var blobs []blob
	if err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketBlobs).ForEach(func(k, v []byte) error {
			blobs = append(blobs, blob{string(k), copyBytes(v)})
			return nil
		})
	}); err != nil {
		rep.Add("blobs", "cannot be listed: "+cause(err), "*")
	}
	for _, b := range blobs {
		rep.Blobs++
		switch {
		case len(b.val) == 0:
			rep.Add("blob "+b.hash, "its record is empty")
		case b.val[0] == blobInline:
			if Hash(b.val[1:]) != b.hash {
				rep.Add("blob "+b.hash, "its bytes do not match its sha256")
				continue
			}
			rep.blobOK[b.hash] = true
		case b.val[0] == blobFile:
			path := filepath.Join(db.blobDir, b.hash)
			data, err := os.ReadFile(path)
			switch {
			case err != nil:
				rep.Add("blob "+b.hash, fmt.Sprintf("its file cannot be read: %v", err))
			case Hash(data) != b.hash:
				rep.Add("blob "+b.hash, fmt.Sprintf("its file %s does not match its sha256", path))
			default:
				rep.blobOK[b.hash] = true
			}
		default:
			rep.Add("blob "+b.hash, fmt.Sprintf("its record has kind %d, want 0 (inline) or 1 (file)", b.val[0]))
		}
	}
}

// checkCheckpoints checks that each checkpoint parses and that its blobs
// are intact. A checkpoint id begins with its run's id and a slash.
func (db *DB) checkCheckpoints(rep *CheckReport, runIDs []string) {
	var cks []Checkpoint
	if err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCheckpoints).ForEach(func(k, v []byte) error {
			var c Checkpoint
			if err := json.Unmarshal(v, &c); err != nil {
				rep.Add("checkpoint "+string(k), fmt.Sprintf("its record is not JSON: %v", err), runOf(string(k), runIDs)...)
				return nil
			}
			c.ID = string(k)
			cks = append(cks, c)
			return nil
		})
	}); err != nil {
		rep.Add("checkpoints", "cannot be listed: "+cause(err), "*")
	}
	for _, c := range cks {
		rep.Checkpoints++
		rep.ckpts[c.ID] = true
		for _, h := range c.Blobs {
			if !rep.blobOK[h] {
				rep.Add("checkpoint "+c.ID, fmt.Sprintf("blob %s is missing or damaged", short(h)), runOf(c.ID, runIDs)...)
			}
		}
	}
}

func runOf(ckpt string, runIDs []string) []string {
	run, _, ok := strings.Cut(ckpt, "/")
	if ok && slices.Contains(runIDs, run) {
		return []string{run}
	}
	return []string{"*"}
}

func short(h string) string { return h[:min(len(h), 12)] }

// checkRun checks one run's record: its keys, its config and cursor as
// JSON, its sequenced records' keys and JSON, and its pinned blobs.
func (db *DB) checkRun(rep *CheckReport, id string) {
	rc := RunCheck{ID: id}
	bad := func(what string) { rep.Add("run "+id, what, id) }
	err := db.view(func(tx *bolt.Tx) error {
		rb := tx.Bucket(bucketRuns).Bucket([]byte(id))
		for _, k := range [][]byte{keyConfig, keyStatus, keyCreated} {
			if rb.Get(k) == nil {
				bad(fmt.Sprintf("its %s is missing", k))
			}
		}
		if c := rb.Get(keyConfig); c != nil && !json.Valid(c) {
			bad("its config is not JSON")
		}
		if c := rb.Get(keyCursor); c != nil {
			if !json.Valid(c) {
				bad("its resume point is not JSON")
			} else {
				rc.Cursor = copyBytes(c)
			}
		}
		if l := rb.Get(keyLabels); l != nil {
			var labels map[string]string
			if err := json.Unmarshal(l, &labels); err != nil {
				bad("its labels are not a JSON object of strings")
			}
		}
		if p := rb.Get(keyPins); p != nil {
			var hs []string
			if err := json.Unmarshal(p, &hs); err != nil {
				bad("the list of blobs its resume point uses is not JSON")
			}
			for _, h := range hs {
				if !rep.blobOK[h] {
					bad(fmt.Sprintf("its resume point uses blob %s, which is missing or damaged", short(h)))
				}
			}
		}
		for _, sub := range [][]byte{bucketEvents, bucketSamples, bucketControl, bucketCandidates} {
			b := rb.Bucket(sub)
			if b == nil {
				bad(fmt.Sprintf("its %s are missing", sub))
				continue
			}
			n, badKeys, badJSON := 0, 0, 0
			var last uint64
			b.ForEach(func(k, v []byte) error {
				n++
				if string(sub) != string(bucketCandidates) {
					if len(k) != 8 {
						badKeys++
						return nil
					}
					last = max(last, binary.BigEndian.Uint64(k))
				}
				if !json.Valid(v) {
					badJSON++
				}
				return nil
			})
			if badKeys > 0 {
				bad(fmt.Sprintf("%d of its %s have keys that are not sequence numbers", badKeys, sub))
			}
			if badJSON > 0 {
				bad(fmt.Sprintf("%d of its %s are not JSON", badJSON, sub))
			}
			switch string(sub) {
			case string(bucketEvents):
				rep.Events += n
				rc.LastEvent = last
			case string(bucketSamples):
				rc.LastSample = last
			}
		}
		return nil
	})
	if err != nil {
		bad("cannot be read: " + cause(err))
		return
	}
	rep.RunChecks = append(rep.RunChecks, rc)
}

// checkHeaders reads the header of every page in use (neither free nor
// the continuation of an overflow page) from the file: its id must be its
// position and its type one of bbolt's. bbolt's own check asserts both,
// in a goroutine that nothing can recover.
func (db *DB) checkHeaders() error {
	f, err := os.Open(db.path)
	if err != nil {
		return err
	}
	defer f.Close()
	ps := db.bolt.Info().PageSize
	return db.view(func(tx *bolt.Tx) error {
		hdr := make([]byte, 16)
		for id := 0; ; id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil {
				return nil // the high water mark
			}
			if info.Type == "free" {
				continue
			}
			if _, err := f.ReadAt(hdr, int64(id)*int64(ps)); err != nil {
				return db.damaged("page %d cannot be read: %v", id, err)
			}
			self, flags := binary.LittleEndian.Uint64(hdr), binary.LittleEndian.Uint16(hdr[8:])
			if self != uint64(id) {
				return db.damaged("page %d calls itself page %d", id, self)
			}
			switch flags {
			case 0x01, 0x02, 0x04, 0x10: // branch, leaf, meta, freelist
			default:
				return db.damaged("page %d has type flags %#x", id, flags)
			}
			id += int(binary.LittleEndian.Uint32(hdr[12:])) // its overflow pages
		}
	})
}
