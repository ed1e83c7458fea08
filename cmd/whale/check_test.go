package main

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/engine"
	"whale/core/store"
)

// storedRun writes a workspace with one run at a resume point: its
// weights and optimizer blobs, two events, a kept checkpoint.
func storedRun(t *testing.T, eventsSeq uint64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateRun("r", []byte(`{"domain":"math"}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	w, _ := db.PutBlob([]byte("weights"))
	o, _ := db.PutBlob([]byte("optimizer"))
	if err := db.PutCheckpoint(store.Checkpoint{ID: "r/01-weights", Manifest: []byte(`{"round":1}`), Blobs: []string{w, o}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendEvents("r", []byte(`{"kind":"run_started"}`), []byte(`{"kind":"phase_started"}`)); err != nil {
		t.Fatal(err)
	}
	st, _ := json.Marshal(engine.State{Weights: w, Optimizer: o, EventsSeq: eventsSeq, BestCkpt: "r/01-weights"})
	if err := db.SetResumePoint("r", "running", st, []string{w, o}, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckAndBackupCommands(t *testing.T) {
	path := storedRun(t, 2)
	out, err := runWhale(t, "check", "--db", path, "--json")
	var rep struct {
		OK       bool            `json:"ok"`
		Runs     int             `json:"runs"`
		Problems []store.Problem `json:"problems"`
		Affected []string        `json:"affected_runs"`
	}
	lastJSONLine(t, out, &rep)
	if err != nil || !rep.OK || rep.Runs != 1 {
		t.Fatalf("check of a sound workspace: %v\n%s", err, out)
	}

	copyPath := filepath.Join(t.TempDir(), "copy.db")
	out, err = runWhale(t, "backup", "--db", path, "--out", copyPath, "--json")
	var info store.BackupInfo
	lastJSONLine(t, out, &info)
	if err != nil || info.Out != copyPath || info.Bytes == 0 {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	if out, err := runWhale(t, "check", "--db", copyPath); err != nil || !strings.Contains(out, "no damage found") {
		t.Fatalf("check of the backup: %v\n%s", err, out)
	}
	if _, err := runWhale(t, "backup", "--db", path); !isUsage(err) {
		t.Fatalf("backup without --out: %v, want a usage error", err)
	}

	// A resume point that claims more events than are stored.
	bad := storedRun(t, 5)
	out, err = runWhale(t, "check", "--db", bad, "--json")
	lastJSONLine(t, out, &rep)
	if err == nil || rep.OK || len(rep.Affected) != 1 || rep.Affected[0] != "r" || !strings.Contains(rep.Problems[0].What, "event 5, but only 2") {
		t.Fatalf("check of a run missing events: %v\n%s", err, out)
	}
	if !strings.Contains(err.Error(), "affecting runs r") {
		t.Fatalf("check's error: %v", err)
	}
}

// A workspace with damaged pages ends whale with exit status 1 and one
// sentence naming the file, never a stack trace: every page of the file
// overwritten in turn, and 'whale show' run on each copy.
func TestDamagedWorkspaceExitsWithOneSentence(t *testing.T) {
	path := storedRun(t, 2)
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(20, 3))
	damaged := 0
	for pg := 2; pg < len(file)/4096; pg++ {
		b := bytes.Clone(file)
		for i := pg * 4096; i < pg*4096+400; i++ {
			b[i] = byte(rng.IntN(256))
		}
		p := filepath.Join(t.TempDir(), "d.db")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "show", "r", "--db", p)
		cmd.Env = append(os.Environ(), "WHALE_TEST_AS_MAIN=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		msg := stderr.String()
		if strings.Contains(msg, "goroutine") || strings.Contains(msg, "panic") {
			t.Fatalf("page %d: whale crashed:\n%s", pg, msg)
		}
		if err == nil {
			continue // damage inside a value that show does not read
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
			t.Fatalf("page %d: %v, stderr:\n%s\nwant exit status 1 and one line", pg, err, msg)
		}
		if strings.Contains(msg, "is damaged") {
			damaged++
			if !strings.Contains(msg, p) || !strings.Contains(msg, "whale check") {
				t.Fatalf("page %d: %s", pg, msg)
			}
		}
	}
	if damaged == 0 {
		t.Fatal("no copy was reported damaged")
	}
}
