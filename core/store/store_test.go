package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func open(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "w.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestRunsEventsSurviveReopen(t *testing.T) {
	db := open(t)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	if err := db.CreateRun("r1", []byte(`{"domain":"math"}`), now); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRun("r1", nil, now); err == nil {
		t.Fatal("a run id was created twice")
	}
	var evs [][]byte
	for i := 0; i < 300; i++ { // past 255: keys must sort numerically
		evs = append(evs, []byte(fmt.Sprintf(`{"i":%d}`, i)))
	}
	last, err := db.AppendEvents("r1", evs...)
	if err != nil || last != 300 {
		t.Fatalf("last seq %d, err %v", last, err)
	}
	if err := db.SetRunState("r1", "running", []byte(`{"step":3}`)); err != nil {
		t.Fatal(err)
	}
	path := db.Path()
	db.Close()
	db2, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	r, err := db2.GetRun("r1")
	if err != nil || r.Status != "running" || string(r.Cursor) != `{"step":3}` || !r.Created.Equal(now) {
		t.Fatalf("run after reopen: %+v, %v", r, err)
	}
	want := uint64(250)
	err = db2.Events("r1", 250, func(seq uint64, ev []byte) error {
		if seq != want || !bytes.Equal(ev, evs[seq-1]) {
			return fmt.Errorf("event %d = %s, want seq %d", seq, ev, want)
		}
		want++
		return nil
	})
	if err != nil || want != 301 {
		t.Fatalf("events from 250: %v (next %d)", err, want)
	}
	if _, err := db2.GetRun("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	}
	if _, err := db2.AppendSamples("nope", []byte("{}")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("samples of a missing run: %v", err)
	}
}

func TestNewerSchemaRefusedAndUntouched(t *testing.T) {
	db := open(t)
	db.CreateRun("r", []byte("{}"), time.Now())
	db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, u64(SchemaVersion+1)) })
	path := db.Path()
	db.Close()
	before, _ := os.ReadFile(path)
	if _, err := Open(path, time.Second); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("refusing a newer file changed it")
	}
}

func TestHarnessArchiveKeepsFirstLineage(t *testing.T) {
	db := open(t)
	h := Harness{Hash: Hash([]byte("src")), Source: "src", Parent: "p0", Proposer: "mutation"}
	db.PutHarness(h)
	db.PutHarness(Harness{Hash: h.Hash, Source: "src", Parent: "other"})
	got, err := db.GetHarness(h.Hash)
	if err != nil || got != h {
		t.Fatalf("harness %+v, %v", got, err)
	}
}

func TestBlobsAndCheckpoints(t *testing.T) {
	db := open(t)
	small := []byte("tensor bytes")
	big := bytes.Repeat([]byte{7, 1}, InlineBlobLimit)
	hs, err := db.PutBlob(small)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := db.PutBlob(big)
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[string][]byte{hs: small, hb: big} {
		got, err := db.GetBlob(h)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("blob %s: %d bytes, %v", h, len(got), err)
		}
	}
	if _, err := os.Stat(filepath.Join(db.blobDir, hb)); err != nil {
		t.Fatalf("large blob not in a file: %v", err)
	}
	if err := db.PutCheckpoint(Checkpoint{ID: "r1/0001", Manifest: []byte(`{}`), Blobs: []string{hs, Hash([]byte("missing"))}}); err == nil {
		t.Fatal("checkpoint referencing a missing blob committed")
	}
	if _, err := db.GetCheckpoint("r1/0001"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused checkpoint is readable: %v", err)
	}
	if err := db.PutCheckpoint(Checkpoint{ID: "r1/0001", Manifest: []byte(`{"step":1}`), Blobs: []string{hs, hb}}); err != nil {
		t.Fatal(err)
	}
	db.PutCheckpoint(Checkpoint{ID: "r2/0001", Manifest: []byte(`{}`)})
	ids, _ := db.Checkpoints("r1/")
	if len(ids) != 1 || ids[0] != "r1/0001" {
		t.Fatalf("checkpoints of r1: %v", ids)
	}
	// A damaged blob file is reported, never returned.
	os.WriteFile(filepath.Join(db.blobDir, hb), []byte("garbage"), 0o644)
	if _, err := db.GetBlob(hb); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged blob: %v", err)
	}
}

func TestSecondOpenTimesOut(t *testing.T) {
	db := open(t)
	_, err := Open(db.Path(), 50*time.Millisecond)
	if err == nil {
		t.Fatal("a second open of a locked workspace succeeded")
	}
	if want := fmt.Sprintf("in use by pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the holder (%q)", err, want)
	}
}

func TestTruncateAndDeleteBlob(t *testing.T) {
	db := open(t)
	db.CreateRun("r", []byte("{}"), time.Now())
	db.AppendEvents("r", []byte("1"), []byte("2"), []byte("3"))
	if err := db.TruncateEvents("r", 1); err != nil {
		t.Fatal(err)
	}
	if last, _ := db.AppendEvents("r", []byte("2b")); last != 2 {
		t.Fatalf("after truncating to 1 the next event is %d, want 2", last)
	}
	var got []string
	db.Events("r", 0, func(_ uint64, ev []byte) error { got = append(got, string(ev)); return nil })
	if strings.Join(got, ",") != "1,2b" {
		t.Fatalf("events %v", got)
	}
	big := bytes.Repeat([]byte{3}, InlineBlobLimit+1)
	h, _ := db.PutBlob(big)
	kept, _ := db.PutBlob([]byte("kept"))
	db.PutCheckpoint(Checkpoint{ID: "c", Manifest: []byte("{}"), Blobs: []string{kept}})
	if err := db.DeleteBlob(kept); err == nil {
		t.Fatal("deleted a blob a checkpoint references")
	}
	if err := db.DeleteBlob(h); err != nil {
		t.Fatal(err)
	}
	if db.HasBlob(h) {
		t.Fatal("blob still there")
	}
	if _, err := os.Stat(filepath.Join(db.blobDir, h)); !os.IsNotExist(err) {
		t.Fatalf("blob file left behind: %v", err)
	}
}

func TestCorruptFileRefusedAndUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.db")
	junk := bytes.Repeat([]byte("not a bbolt file "), 4096)
	os.WriteFile(path, junk, 0o644)
	if _, err := Open(path, time.Second); err == nil {
		t.Fatal("a corrupt file opened")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, junk) {
		t.Fatal("refusing a corrupt file changed it")
	}
}

func TestMigrationStepsRunInOrder(t *testing.T) {
	db := open(t)
	db.CreateRun("r", []byte("{}"), time.Now())
	db.bolt.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, u64(0)) })
	path := db.Path()
	db.Close()
	if _, err := Open(path, time.Second); err == nil || !strings.Contains(err.Error(), "no migration from schema 0") {
		t.Fatalf("an old file without a migration: %v", err)
	}
	migrations[0] = func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte("migrated"), []byte("yes")) }
	defer delete(migrations, 0)
	db2, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	db2.bolt.View(func(tx *bolt.Tx) error {
		if string(tx.Bucket(bucketMeta).Get([]byte("migrated"))) != "yes" || binary.BigEndian.Uint64(tx.Bucket(bucketMeta).Get(keySchema)) != SchemaVersion {
			t.Error("migration step did not run or the version was not raised")
		}
		return nil
	})
	if _, err := db2.GetRun("r"); err != nil {
		t.Fatalf("data lost in migration: %v", err)
	}
}

func TestCollectGarbage(t *testing.T) {
	db := open(t)
	kept, _ := db.PutBlob([]byte("kept by a checkpoint"))
	live, _ := db.PutBlob([]byte("a resume point's"))
	dead, _ := db.PutBlob([]byte("garbage"))
	db.PutCheckpoint(Checkpoint{ID: "c1", Manifest: []byte("{}"), Blobs: []string{kept}})
	n, freed, err := db.CollectGarbage(func(h string) bool { return h == live })
	if err != nil || n != 1 || freed != int64(len("garbage")) {
		t.Fatalf("collected %d blobs, %d bytes, %v", n, freed, err)
	}
	if db.HasBlob(dead) || !db.HasBlob(kept) || !db.HasBlob(live) {
		t.Fatal("wrong blobs collected")
	}
	if err := db.DeleteCheckpoint("c1"); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := db.CollectGarbage(func(string) bool { return false }); n != 2 {
		t.Fatalf("after dropping the checkpoint %d blobs collected, want 2", n)
	}
}

func TestPinnedBlobsSurviveAnotherRunsCleanup(t *testing.T) {
	db := open(t)
	for _, id := range []string{"a", "b"} {
		if err := db.CreateRun(id, []byte(`{}`), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
	shared, err := db.PutBlob([]byte("the same starting weights"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if err := db.SetResumePoint(id, "running", []byte(`{"step":0}`), []string{shared}, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Run a moves on and drops its old blob: b still uses it.
	if err := db.SetResumePoint("a", "running", []byte(`{"step":1}`), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBlob(shared); !errors.Is(err, ErrBlobInUse) || !strings.Contains(err.Error(), "run b") {
		t.Fatalf("delete of a blob pinned by run b: %v", err)
	}
	if _, err := db.GetBlob(shared); err != nil {
		t.Fatalf("pinned blob lost: %v", err)
	}
	if err := db.SetResumePoint("b", "running", []byte(`{"step":1}`), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteBlob(shared); err != nil {
		t.Fatalf("unpinned blob: %v", err)
	}
	if r, _ := db.GetRun("b"); string(r.Cursor) != `{"step":1}` || r.Status != "running" {
		t.Fatalf("run b after SetResumePoint: %+v", r)
	}
}

// Two runs of a bench that start from the same weights write the same
// file-backed blob at the same moment: every write succeeds, the blob reads
// back intact, and no temporary file is left behind.
func TestConcurrentWritesOfOneBlob(t *testing.T) {
	db := open(t)
	big := bytes.Repeat([]byte("starting weights "), InlineBlobLimit/8)
	const writers = 8
	errs := make(chan error, writers)
	start := make(chan struct{})
	for i := 0; i < writers; i++ {
		go func() {
			<-start
			_, err := db.PutBlob(big)
			errs <- err
		}()
	}
	close(start)
	for i := 0; i < writers; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent write of one blob: %v", err)
		}
	}
	got, err := db.GetBlob(Hash(big))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("blob after concurrent writes: %d bytes, %v", len(got), err)
	}
	left, _ := filepath.Glob(filepath.Join(db.blobDir, "*.tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestResumePointRefusesMissingBlob(t *testing.T) {
	db := open(t)
	if err := db.CreateRun("a", []byte(`{}`), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	missing := Hash([]byte("never stored"))
	err := db.SetResumePoint("a", "running", []byte(`{"step":3}`), []string{missing}, 0)
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("resume point pinning a missing blob: %v", err)
	}
	if r, _ := db.GetRun("a"); string(r.Cursor) == `{"step":3}` {
		t.Fatal("a refused resume point was stored")
	}
}

// A run's compute time is the sum of what its resume points spent, kept
// across reopening the file; a refused resume point adds nothing.
func TestComputeTimeAddsUpOverResumePoints(t *testing.T) {
	db := open(t)
	if err := db.CreateRun("a", []byte(`{}`), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if r, _ := db.GetRun("a"); r.Compute != 0 {
		t.Fatalf("new run's compute time %v, want 0", r.Compute)
	}
	for _, d := range []time.Duration{1500 * time.Millisecond, 0, 3 * time.Minute} {
		if err := db.SetResumePoint("a", "running", []byte(`{}`), nil, d); err != nil {
			t.Fatal(err)
		}
	}
	missing := Hash([]byte("never stored"))
	if err := db.SetResumePoint("a", "running", []byte(`{}`), []string{missing}, time.Hour); err == nil {
		t.Fatal("resume point pinning a missing blob was accepted")
	}
	if err := db.SetResumePoint("a", "running", []byte(`{}`), nil, -time.Second); err == nil || !strings.Contains(err.Error(), "run a") {
		t.Fatalf("negative spent time: %v", err)
	}
	path := db.Path()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db2, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	want := 3*time.Minute + 1500*time.Millisecond
	r, err := db2.GetRun("a")
	if err != nil || r.Compute != want {
		t.Fatalf("compute time after reopening: %v (%v), want %v", r.Compute, err, want)
	}
	if runs, _ := db2.Runs(); len(runs) != 1 || runs[0].Compute != want {
		t.Fatalf("Runs() compute time: %+v", runs)
	}

	// A run created before compute time was kept has no record, and its
	// later resume points do not start one (they would time only a part).
	if err := db2.CreateRun("old", []byte(`{}`), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := db2.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).Bucket([]byte("old")).Delete(keyCompute)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db2.SetResumePoint("old", "running", []byte(`{"step":9}`), nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, _ := db2.GetRun("old"); r.Compute != 0 || string(r.Cursor) != `{"step":9}` {
		t.Fatalf("run without a record: compute %v, cursor %s; want 0 and the new cursor", r.Compute, r.Cursor)
	}
}

// A run's labels are set one at a time, keep each other, survive a reopen,
// and refuse what they cannot hold; labels that are not JSON read as none
// and Check names them.
func TestRunLabels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRun("r1", []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	if r, err := db.GetRun("r1"); err != nil || r.Labels != nil {
		t.Fatalf("a new run's labels: %v, %v", r.Labels, err)
	}
	for _, kv := range [][2]string{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
		if err := db.SetRunLabel("r1", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetRunLabel("nope", "a", "1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("label of a missing run: %v", err)
	}
	if err := db.SetRunLabel("r1", "", "1"); err == nil || !strings.Contains(err.Error(), "empty label key") {
		t.Fatalf("empty label key: %v", err)
	}
	db.Close()
	if db, err = Open(path, time.Second); err != nil {
		t.Fatal(err)
	}
	r, err := db.GetRun("r1")
	if err != nil || len(r.Labels) != 2 || r.Labels["a"] != "3" || r.Labels["b"] != "2" {
		t.Fatalf("labels after reopen: %v, %v", r.Labels, err)
	}
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRuns).Bucket([]byte("r1")).Put(keyLabels, []byte(`{"a":`))
	}); err != nil {
		t.Fatal(err)
	}
	if r, err := db.GetRun("r1"); err != nil || r.Labels != nil {
		t.Fatalf("damaged labels read as %v, %v", r.Labels, err)
	}
	if err := db.SetRunLabel("r1", "c", "1"); err == nil || !strings.Contains(err.Error(), "labels are not") {
		t.Fatalf("a label set over damaged labels: %v", err)
	}
	rep := db.Check()
	if !slices.ContainsFunc(rep.Problems, func(p Problem) bool { return strings.Contains(p.What, "labels are not") }) {
		t.Fatalf("Check missed damaged labels: %+v", rep.Problems)
	}
	db.Close()
}
