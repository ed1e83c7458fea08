package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Check finds nothing in a sound store, and in a damaged one names what
// is damaged and the runs it affects: an inline blob whose bytes changed,
// a file blob that went missing, an event that is no longer JSON.
func TestCheckNamesDamageAndAffectedRuns(t *testing.T) {
	file, _, _ := smallStore(t)
	path := filepath.Join(t.TempDir(), "w.db")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, InlineBlobLimit+1)
	fileBlob, err := db.PutBlob(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutCheckpoint(Checkpoint{ID: "math-2/09-weights", Manifest: []byte(`{}`), Blobs: []string{fileBlob}}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	check := func() *CheckReport {
		t.Helper()
		db, err := OpenReadOnly(path, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		return db.Check()
	}
	if rep := check(); len(rep.Problems) > 0 || rep.Runs != 3 || rep.Events != 450 || rep.Blobs != 13 || rep.Checkpoints != 7 {
		t.Fatalf("sound store: %+v", rep)
	}

	// Damage: math-0's pinned blob rewritten, an event of math-1 cut short,
	// math-2's checkpoint file blob removed.
	db, err = Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var pinned string
	if err := db.bolt.Update(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bucketRuns)
		pins := string(runs.Bucket([]byte("math-0")).Get(keyPins))
		pinned = pins[2:66]
		if err := tx.Bucket(bucketBlobs).Put([]byte(pinned), []byte("\x00not the bytes")); err != nil {
			return err
		}
		return runs.Bucket([]byte("math-1")).Bucket(bucketEvents).Put(u64(7), []byte(`{"kind":"weigh`))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := os.Remove(filepath.Join(path+".blobs", fileBlob)); err != nil {
		t.Fatal(err)
	}
	rep := check()
	text := ""
	for _, p := range rep.Problems {
		text += p.Where + ": " + p.What + "\n"
	}
	for _, want := range []string{"blob " + pinned + ": its bytes do not match", "run math-0: its resume point uses blob " + pinned[:12],
		"run math-1: 1 of its events are not JSON", "blob " + fileBlob + ": its file cannot be read", "checkpoint math-2/09-weights: blob " + fileBlob[:12]} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	if got := rep.Affected(); !slices.Equal(got, []string{"math-0", "math-1", "math-2"}) {
		t.Errorf("affected runs %v, want all three", got)
	}
}
