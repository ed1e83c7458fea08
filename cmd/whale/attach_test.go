package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"whale/core/attach"
	"whale/core/engine"
	"whale/core/store"
)

// idleRun stands for an engine the holder runs: it publishes nothing and
// takes every command.
type idleRun struct{ b *engine.Broker[engine.Event] }

func (r idleRun) Subscribe(n int) *engine.Subscription[engine.Event] { return r.b.Subscribe(n) }
func (r idleRun) Send(engine.Command) error                          { return nil }

// TestShowAndRunsReadAStoreAnotherProcessHolds: while the workspace is
// held (here by this process, which bbolt's lock treats as any other),
// runs and show ask its holder through the socket; without one they fail
// naming the holder.
func TestShowAndRunsReadAStoreAnotherProcessHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range []string{"math-a", "math-b"} {
		if err := db.CreateRun(id, json.RawMessage(`{"domain":"math"}`), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runWhale(t, "runs", "--db", path); err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), "answers no requests") {
		t.Fatalf("runs of a held store with no socket: %v", err)
	}
	srv, err := attach.Serve(db)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer srv.Add("math-b", idleRun{engine.NewBroker[engine.Event]()})()

	out, err := runWhale(t, "runs", "--db", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		RunID string `json:"run_id"`
		Live  bool   `json:"live"`
		Owner string `json:"owner"`
	}
	lastJSONLine(t, out, &rows)
	if len(rows) != 2 || rows[0].Live || !rows[1].Live || !strings.HasPrefix(rows[1].Owner, "pid ") {
		t.Fatalf("runs through the holder: %+v", rows)
	}
	out, err = runWhale(t, "show", "math-b", "--db", path)
	if err != nil || !strings.Contains(out, "live in pid ") || strings.Contains(out, "resumable") {
		t.Fatalf("show of a live run: %v\n%s", err, out)
	}
	if _, err := runWhale(t, "show", "nope", "--db", path); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("show of a missing run through the holder: %v", err)
	}
}

// TestHeadlessBenchPrintsProgressOfRunningRuns: without a terminal the
// bench prints, besides a line per started and finished run, a line per
// running run every --progress-every.
func TestHeadlessBenchPrintsProgressOfRunningRuns(t *testing.T) {
	dir := t.TempDir()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"bench", "conditions", "--domain", "math", "--preset", "tiny", "--seeds", "1", "--budget", "16",
		"--conditions", "weight-only", "--workers", "1", "--model", tinyModelFile(t, dir), "--db", filepath.Join(dir, "b.db"),
		"--out", filepath.Join(dir, "results"), "--progress-every", "20ms"})
	if err := root.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	progress := regexp.MustCompile(`\[1/1\] bench-math-weight-only-b16-s1: (starting|round \d+ (weights|harness)), \d+/16 model calls \(\d+%\), best val \S+, elapsed \S+, ETA \S+`)
	if !progress.MatchString(errb.String()) || !strings.Contains(errb.String(), "[1/1] bench-math-weight-only-b16-s1: starting") {
		t.Fatalf("stderr has no progress line of the running run:\n%s", errb.String())
	}
}

// TestLockedWriterKeepsConcurrentLinesWhole: the bench's workers and its
// headless dashboard write progress lines from their own goroutines; each
// line arrives whole (and, under -race, without a data race).
func TestLockedWriterKeepsConcurrentLinesWhole(t *testing.T) {
	var buf bytes.Buffer
	w := &lockedWriter{w: &buf}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				fmt.Fprintf(w, "worker %d line %03d of this bench\n", g, i)
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	whole := regexp.MustCompile(`^worker \d line \d{3} of this bench$`)
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for _, l := range lines {
		if !whole.MatchString(l) {
			t.Fatalf("a torn line: %q", l)
		}
	}
}
