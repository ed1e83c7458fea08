package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"whale/internal/longtests"
)

// smallStore writes a workspace like a few finished runs leave: events,
// samples, journaled commands, candidates, harnesses, inline blobs (some
// spanning overflow pages), checkpoints and resume points. It returns the
// file's bytes and the blob and harness hashes it stored.
func smallStore(t testing.TB) (file []byte, blobs, harnesses []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "small.db")
	db, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	db.bolt.NoSync = true // a test file: no power cut to survive
	rng := rand.New(rand.NewPCG(20, 1))
	for r := range 3 {
		id := fmt.Sprintf("math-%d", r)
		if err := db.CreateRun(id, []byte(`{"domain":"math","preset":"tiny"}`), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		for i := range 150 {
			ev := fmt.Sprintf(`{"kind":"weight_step","round":%d,"step":%d,"data":{"loss":%.6f,"pad":%q}}`, 1+i/50, i, rng.Float64(), strings.Repeat("x", rng.IntN(200)))
			if _, err := db.AppendEvents(id, []byte(ev)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 60 {
			if _, err := db.AppendSamples(id, []byte(fmt.Sprintf(`{"i":%d,"reward":1,"text":%q}`, i, strings.Repeat("y", 100)))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.AppendControl(id, []byte(`{"kind":"force","step":3}`)); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			h := Harness{Hash: Hash([]byte(fmt.Sprint(r, i))), Source: strings.Repeat("SYSTEM_PROMPT = 'be brief'\n", 20), Proposer: "mutation"}
			if err := db.PutHarness(h); err != nil {
				t.Fatal(err)
			}
			harnesses = append(harnesses, h.Hash)
			if err := db.PutCandidate(id, h.Hash, []byte(`{"score":0.5}`)); err != nil {
				t.Fatal(err)
			}
		}
		var pins []string
		for i := range 4 {
			b := make([]byte, 1000+rng.IntN(9000))
			for j := range b {
				b[j] = byte(rng.IntN(256))
			}
			h, err := db.PutBlob(b)
			if err != nil {
				t.Fatal(err)
			}
			blobs, pins = append(blobs, h), append(pins, h)
			if i%2 == 1 {
				if err := db.PutCheckpoint(Checkpoint{ID: fmt.Sprintf("%s/%02d-weights", id, i), Manifest: []byte(`{"round":1}`), Blobs: pins[i-1 : i+1]}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := db.SetResumePoint(id, "finished", []byte(`{"round":3,"weights":"`+pins[3]+`"}`), pins[2:], time.Second); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	file, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return file, blobs, harnesses
}

// readEverything calls every read path of the store, then two writes, and
// returns the errors it met. A panic propagates to the caller.
func readEverything(db *DB, blobs, harnesses []string) []error {
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	runs, err := db.Runs()
	note(err)
	ids := []string{"math-0", "math-1", "math-2"}
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	each := func(uint64, []byte) error { return nil }
	for _, id := range ids {
		_, err := db.GetRun(id)
		note(err)
		note(db.Events(id, 0, each))
		note(db.Samples(id, 0, each))
		note(db.Control(id, each))
		note(db.Candidates(id, func(string, []byte) error { return nil }))
	}
	for _, h := range harnesses {
		_, err := db.GetHarness(h)
		note(err)
	}
	for _, h := range blobs {
		db.HasBlob(h)
		_, err := db.GetBlob(h)
		note(err)
	}
	cks, err := db.Checkpoints("")
	note(err)
	for _, id := range cks {
		_, err := db.GetCheckpoint(id)
		note(err)
	}
	_, err = db.AppendEvents("math-1", []byte(`{"kind":"run_resumed"}`))
	note(err)
	_, err = db.PutBlob([]byte("a new blob"))
	note(err)
	return errs
}

// TestDamagedPagesNeverPanic overwrites 400 bytes in one page of a small
// workspace, for every page, and reads everything from each copy: bbolt
// panics on pages it cannot parse, and every one of those must come back
// as an error that names the file and says it is damaged. (A copy may
// also read without error: damage inside a value is what whale check's
// hashes are for.) Four patterns per page: random bytes at a random
// offset, at the page header, zeros, 0xff; with WHALE_LONG_TESTS twelve
// more random offsets.
func TestDamagedPagesNeverPanic(t *testing.T) {
	file, blobs, harnesses := smallStore(t)
	const pageSize = 4096
	pages := len(file) / pageSize
	patterns := 4
	if longtests.Enabled() {
		patterns = 16
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(20, 2))
	damaged, silent, checked := 0, 0, 0
	t0 := time.Now()
	for pg := range pages {
		for pat := range patterns {
			b := append([]byte(nil), file...)
			off := pg*pageSize + rng.IntN(pageSize-400)
			if pat == 1 {
				off = pg * pageSize // the page header
			}
			for i := off; i < off+400; i++ {
				switch pat {
				case 2:
					b[i] = 0
				case 3:
					b[i] = 0xff
				default:
					b[i] = byte(rng.IntN(256))
				}
			}
			path := filepath.Join(dir, fmt.Sprintf("p%d-%d.db", pg, pat))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			errs := func() (errs []error) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("page %d pattern %d (bytes %d..%d): panic: %v\n%s", pg, pat, off, off+400, r, debug.Stack())
					}
				}()
				db, err := Open(path, time.Second)
				if err != nil {
					return []error{err}
				}
				defer db.Close()
				db.bolt.NoSync = true
				return readEverything(db, blobs, harnesses)
			}()
			found := false
			for _, err := range errs {
				var de *DamagedError
				if errors.As(err, &de) {
					found = true
					if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "damaged") || !strings.Contains(msg, "whale check") || strings.Contains(msg, "\n") {
						t.Fatalf("page %d: the error does not name the file, the damage and what to do in one line: %s", pg, msg)
					}
				}
			}
			// whale check on the same bytes (it reads a fresh copy: the
			// writes above may have landed) sees at least what the reads saw.
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			problems := func() int {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("page %d pattern %d: whale check panicked: %v\n%s", pg, pat, r, debug.Stack())
					}
				}()
				db, err := OpenReadOnly(path, time.Second)
				if err != nil {
					if !errors.Is(err, ErrDamaged) {
						t.Errorf("page %d pattern %d: open read-only: %v", pg, pat, err)
					}
					return 1
				}
				defer db.Close()
				return len(db.Check().Problems)
			}()
			if found && problems == 0 {
				t.Errorf("page %d pattern %d: reads reported damage, whale check found nothing", pg, pat)
			}
			if problems > 0 {
				checked++
			}
			if found {
				damaged++
			} else {
				silent++
			}
			os.Remove(path)
			os.Remove(path + ".lock")
		}
	}
	t.Logf("%d pages × %d patterns in %v: %d reported damaged, %d read without a damaged-file error; whale check found problems in %d", pages, patterns, time.Since(t0).Round(time.Millisecond), damaged, silent, checked)
	if damaged == 0 {
		t.Fatal("no copy was reported damaged: the damage did not reach the pages bbolt parses")
	}
}
