package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"whale/core/engine"
	"whale/core/store"
)

// A run past round 100 keeps, with --keep 3, its three latest kept
// checkpoints in (round, phase) order — 100-harness, 101-weights,
// 101-harness — and its best-val one; as text, "r/100-…" sorts before
// "r/98-…", which once kept round 99 and dropped rounds 100 and 101.
func TestGCKeepOrdersByRoundPastRound100(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRun("r", []byte(`{"domain":"math"}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	for round := 98; round <= 101; round++ {
		for _, ph := range []engine.Phase{engine.PhaseHarness, engine.PhaseWeights} { // stored out of order
			id := fmt.Sprintf("r/%02d-%s", round, ph)
			w, err := db.PutBlob([]byte(id))
			if err != nil {
				t.Fatal(err)
			}
			man, _ := json.Marshal(engine.CheckpointManifest{Run: "r", Round: round, Phase: ph, Weights: w})
			if err := db.PutCheckpoint(store.Checkpoint{ID: id, Manifest: man, Blobs: []string{w}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, _ := json.Marshal(engine.State{BestCkpt: "r/98-weights"})
	if err := db.SetRunState("r", "finished", st); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out, err := runWhale(t, "gc", "--db", path, "--keep", "3", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Dropped []string `json:"checkpoints_dropped"`
		Blobs   int      `json:"blobs_deleted"`
	}
	lastJSONLine(t, out, &res)
	wantDropped := []string{"r/98-harness", "r/99-weights", "r/99-harness", "r/100-weights"}
	if !slices.Equal(res.Dropped, wantDropped) || res.Blobs != len(wantDropped) {
		t.Fatalf("dropped %v and %d blobs, want %v and as many blobs", res.Dropped, res.Blobs, wantDropped)
	}
	db, err = store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	left, err := db.Checkpoints("r/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	want := []string{"r/100-harness", "r/101-harness", "r/101-weights", "r/98-weights"}
	if !slices.Equal(left, want) {
		t.Fatalf("kept %v, want %v", left, want)
	}
}
