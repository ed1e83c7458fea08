package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/ckpt"
	"whale/core/store"
	"whale/internal/longtests"
	"whale/kernels"
)

// TestReadOnlyCommandsNeverCreateAWorkspace: a mistyped --db is an error
// naming the path, and no file appears there.
func TestReadOnlyCommandsNeverCreateAWorkspace(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "typo.db")
	for _, args := range [][]string{
		{"runs"}, {"show", "r"}, {"gc"}, {"resume", "r", "--headless"}, {"export", "r/01-weights", "--out", filepath.Join(dir, "out")}, {"check"},
	} {
		_, err := runWhale(t, append(args, "--db", db)...)
		if err == nil || !strings.Contains(err.Error(), db) {
			t.Errorf("%s with a missing --db: %v, want an error naming %s", args[0], err, db)
		}
		if _, serr := os.Stat(db); serr == nil {
			t.Fatalf("%s created %s", args[0], db)
		}
	}
}

// storeWithRuns writes a workspace holding a finished run and one whose
// process died (stored status "running").
func storeWithRuns(t *testing.T, events int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ id, status string }{{"math-done", "finished"}, {"math-died", "running"}} {
		if err := db.CreateRun(r.id, []byte(`{"domain":"math"}`), time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		for i := range events {
			if _, err := db.AppendEvents(r.id, []byte(fmt.Sprintf(`{"kind":"weight_step","step":%d,"pad":%q}`, i, strings.Repeat("x", 300)))); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.SetRunState(r.id, r.status, []byte(`{"round":1,"step":3}`)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	return path
}

// TestRunsAndShowSayStoppedForADeadRun: a run whose process is gone shows
// as stopped (resumable), not running; a finished run as finished.
func TestRunsAndShowSayStoppedForADeadRun(t *testing.T) {
	db := storeWithRuns(t, 1)
	out, err := runWhale(t, "runs", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	lastJSONLine(t, out, &rows)
	got := map[string]string{}
	for _, r := range rows {
		got[r.RunID] = r.Status
	}
	if got["math-died"] != "stopped" || got["math-done"] != "finished" {
		t.Fatalf("whale runs: %v, want math-died stopped and math-done finished", got)
	}
	out, err = runWhale(t, "show", "math-died", "--db", db)
	if err != nil || !strings.Contains(out, "math-died: stopped") || !strings.Contains(out, "whale resume math-died") {
		t.Fatalf("whale show of a dead run: %v\n%s", err, out)
	}
}

// TestDamagedPagesFailEveryCommandWithASentence: a branch page whose child
// is itself (a stack overflow in bbolt's walk) and a leaf page with
// overflow 0xFFFFFFFF (a hang) make every command that reads the store
// fail with an error naming the file, and whale check report them.
func TestDamagedPagesFailEveryCommandWithASentence(t *testing.T) {
	clean := storeWithRuns(t, 300)
	file, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	const ps = 4096
	branch, leaf := -1, -1
	for pg := 2; pg < len(file)/ps; pg++ {
		switch binary.LittleEndian.Uint16(file[pg*ps+8:]) {
		case 0x01:
			if branch < 0 {
				branch = pg
			}
		case 0x02:
			if leaf < 0 {
				leaf = pg
			}
		}
	}
	if branch < 0 || leaf < 0 {
		t.Fatalf("no branch (%d) or leaf (%d) page in the workspace", branch, leaf)
	}
	for _, c := range []struct {
		what string
		edit func(b []byte)
	}{
		{"a branch page whose child is itself", func(b []byte) { binary.LittleEndian.PutUint64(b[branch*ps+16+8:], uint64(branch)) }},
		{"a leaf page with overflow 0xFFFFFFFF", func(b []byte) { binary.LittleEndian.PutUint32(b[leaf*ps+12:], 0xFFFFFFFF) }},
	} {
		db := filepath.Join(t.TempDir(), "damaged.db")
		b := append([]byte(nil), file...)
		c.edit(b)
		if err := os.WriteFile(db, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"runs"}, {"show", "math-died"}, {"gc"}, {"resume", "math-died", "--headless"},
			{"backup", "--out", filepath.Join(t.TempDir(), "copy.db")}, {"check"}} {
			done := make(chan error, 1)
			go func() {
				_, err := runWhale(t, append(args, "--db", db)...)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "damaged") {
					t.Errorf("%s: whale %s: %v, want an error naming %s as damaged", c.what, args[0], err, db)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("%s: whale %s still running after a minute", c.what, args[0])
			}
		}
	}
}

// TestNonFiniteRunStopsThenResumesWithALowerLR is issue 42's fault test
// on the real wiring: --lr 1e8 on the tiny preset stops with the sentence,
// and resume with a sane --lr runs to a finished run.
func TestNonFiniteRunStopsThenResumesWithALowerLR(t *testing.T) {
	longtests.Skip(t, "a tiny run and its resume take about a minute")
	db := filepath.Join(t.TempDir(), "w.db")
	_, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--lr", "1e8", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "non-finite") || !strings.Contains(err.Error(), "--lr") {
		t.Fatalf("a run at --lr 1e8: %v, want it stopped with a sentence naming what went non-finite", err)
	}
	out, err := runWhale(t, "runs", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	lastJSONLine(t, out, &rows)
	if len(rows) != 1 || rows[0].Status != "stopped" {
		t.Fatalf("after the stop: %+v, want one stopped run", rows)
	}
	if _, err := runWhale(t, "resume", rows[0].RunID, "--headless", "--lr", "1e-4", "--db", db); err != nil {
		t.Fatalf("resume at --lr 1e-4: %v", err)
	}
	out, err = runWhale(t, "show", rows[0].RunID, "--db", db, "--json")
	var show struct {
		Status string          `json:"status"`
		Config json.RawMessage `json:"config"`
	}
	lastJSONLine(t, out, &show)
	if err != nil || show.Status != "finished" || !strings.Contains(string(show.Config), `"lr":0.0001`) {
		t.Fatalf("after resuming: %v %s %s, want finished with lr 1e-4 stored", err, show.Status, show.Config)
	}
}

// TestEvalRefusesNonFiniteWeights: a model folder with a NaN weight is
// refused by whale eval (which scored it 0 without a word), naming the
// tensor.
func TestEvalRefusesNonFiniteWeights(t *testing.T) {
	dir := t.TempDir()
	writeHFFolder(t, dir)
	m, _, _, err := ckpt.LoadDir(dir, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	p := m.Params()[2]
	v, _ := m.ReadParam(p.Name)
	v[7] = float32(math.NaN())
	if err := m.WriteParam(p.Name, v); err != nil {
		t.Fatal(err)
	}
	ts, err := ckpt.Tensors(m, ckpt.F32)
	if err != nil {
		t.Fatal(err)
	}
	if err := ckpt.WriteFile(filepath.Join(dir, ckpt.HFWeights), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	_, err = runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--split", "val", "--n", "2", "--model", dir)
	if err == nil || !strings.Contains(err.Error(), "not finite") || !strings.Contains(err.Error(), p.Name) {
		t.Fatalf("eval of a folder with a NaN weight: %v, want a refusal naming %s", err, p.Name)
	}
}
