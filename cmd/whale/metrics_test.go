package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"whale/core/engine"
	"whale/core/eval"
	"whale/core/metrics"
	"whale/core/metrics/metricstest"
	"whale/core/store"
	"whale/core/tfevent"
	"whale/internal/longtests"
)

// longTinyRun skips tests that make tiny runs unless the long tests are on.
func longTinyRun(t *testing.T) { longtests.Skip(t, "a tiny run takes about a minute") }

func TestMetricsMisuse(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	if _, err := runWhale(t, "metrics", "r1", "--db", db, "--format", "xml"); !isUsage(err) || !strings.Contains(err.Error(), "jsonl, csv, tensorboard") {
		t.Errorf("--format xml: %v, want a usage error naming the formats", err)
	}
	if _, err := runWhale(t, "metrics", "r1", "--db", db); err == nil || !strings.Contains(err.Error(), db) {
		t.Errorf("missing workspace: %v, want an error naming it", err)
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("whale metrics created the workspace it reads")
	}
	empty := emptyWorkspace(t)
	if _, err := runWhale(t, "metrics", "nope", "--db", empty); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing run: %v, want an error naming it", err)
	}
}

// TestTinyRunMetricsAgreeEverywhere makes a tiny run with --tensorboard
// and checks the promises on it: the event file written live is
// the one 'whale metrics --format tensorboard' writes from the store;
// python3-protobuf decodes it, against our own .proto, to every scalar
// the store gives, at x = model calls; JSONL and CSV give the same values.
func TestTinyRunMetricsAgreeEverywhere(t *testing.T) {
	longTinyRun(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	live := filepath.Join(dir, "live")
	id := tinyRun(t, db, "run", "--headless", "--domain", "math", "--preset", "tiny", "--rounds", "1", "--tensorboard", live)

	r, evs, err := storedRunEvents(db, id)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := metrics.FromEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, p := range pts {
		tags[p.Tag] = true
	}
	for _, want := range []string{"weights/loss", "weights/kept_fraction", "weights/entropy", "weights/lr", "harness/best_score",
		"harness/calls", "eval/val/mean@1", "eval/test/pass@2", "eval/test/maj@2", "phase/val_mean", "ledger/calls", "final/test_mean@2"} {
		if !tags[want] {
			t.Errorf("no %s among the run's scalars", want)
		}
	}

	out := filepath.Join(dir, "export")
	if _, err := runWhale(t, "metrics", id, "--db", db, "--format", "tensorboard", "--out", out); err != nil {
		t.Fatal(err)
	}
	path, err := tensorBoardPath(out, r)
	if err != nil {
		t.Fatal(err)
	}
	livePath, _ := tensorBoardPath(live, r)
	exported, err1 := os.ReadFile(path)
	written, err2 := os.ReadFile(livePath)
	if err1 != nil || err2 != nil || !bytes.Equal(exported, written) {
		t.Errorf("the live event file (%v) differs from the exported one (%v)", err2, err1)
	}
	metricstest.CheckDecoded(t, metricstest.PythonDecode(t, filepath.Join("..", ".."), path), pts, wallTime(r))

	j, err := runWhale(t, "metrics", id, "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	c, err := runWhale(t, "metrics", id, "--db", db, "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	fromJ, err1 := metrics.ReadJSONL(strings.NewReader(j))
	fromC, err2 := metrics.ReadCSV(strings.NewReader(c))
	if err1 != nil || err2 != nil || !reflect.DeepEqual(fromJ, pts) || !reflect.DeepEqual(fromC, pts) {
		t.Errorf("jsonl (%v) and csv (%v) do not both give the store's %d points", err1, err2, len(pts))
	}
}

// TestTensorBoardFollowsTheRunsThatGrow: a run that gains events while
// --tensorboard follows the workspace gets its whole event file (events
// stored before included); a run that does not grow gets none.
func TestTensorBoardFollowsTheRunsThatGrow(t *testing.T) {
	path := comparedWorkspace(t) // r-a, r-b, r-c with three events each
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := filepath.Join(t.TempDir(), "tb")
	stop := (&tensorBoardFlag{dir: dir}).follow(db, io.Discard)
	d, _ := json.Marshal(engine.EvalData{Split: "val", Report: eval.Report{K: 2, MeanAtK: 0.5}})
	ev, _ := json.Marshal(engine.Event{Kind: engine.EvEval, Calls: 120, Data: d})
	if _, err := db.AppendEvents("r-b", ev); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r-a", "r-c"} {
		if _, err := os.Stat(filepath.Join(dir, id)); err == nil {
			t.Errorf("run %s did not grow but has an event file", id)
		}
	}
	r, err := db.GetRun("r-b")
	if err != nil {
		t.Fatal(err)
	}
	file, _ := tensorBoardPath(dir, r)
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, err := tfevent.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	// The version record, then the four evaluations' scalars at their calls.
	var steps []int64
	for _, e := range evs[1:] {
		steps = append(steps, e.Step)
	}
	if want := []int64{0, 40, 80, 120}; !reflect.DeepEqual(steps, want) || len(evs[4].Scalars) != 3 || evs[4].Scalars[0] != (tfevent.Scalar{Tag: "eval/val/mean@2", Value: 0.5}) {
		t.Errorf("r-b's file: steps %v (want %v), last record %+v", steps, want, evs[len(evs)-1])
	}
}
