package metrics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	"whale/core/search"
	"whale/core/store"
	"whale/core/weights"
)

func ptr(v float64) *float64 { return &v }

// storedRun stores a run with one event of every kind that carries
// scalars, with values no two tags share, and reads them back as the
// store gives them.
func storedRun(t *testing.T) []engine.Event {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateRun("r1", json.RawMessage(`{}`), time.Unix(1.7e9, 0)); err != nil {
		t.Fatal(err)
	}
	ev := func(kind string, calls, step, it int, phase engine.Phase, payload any) []byte {
		data, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(engine.Event{Kind: kind, Phase: phase, Round: 1, Step: step, Iteration: it, Rollouts: calls / 2, Calls: calls, Data: data})
		return b
	}
	rep := func(k int, m float64) eval.Report {
		return eval.Report{Tasks: 8, Rollouts: 8 * k, K: k, MeanAtK: m, PassAtK: m + 0.25, MajAtK: m + 0.125}
	}
	recs := [][]byte{
		ev(engine.EvRunStarted, 0, 0, 0, engine.PhaseWeights, engine.Config{Domain: "math"}),
		ev(engine.EvEval, 0, 0, 0, engine.PhaseWeights, engine.EvalData{Split: "val", Report: rep(2, 0.125)}),
		ev(engine.EvWeightStep, 8, 1, 0, engine.PhaseWeights, engine.WeightStepData{RewardMean: 0.3, Entropy: 1.25, KeptFraction: 0.375,
			Stats: weights.Stats{Rollouts: 8, Kept: 3, Loss: 2.0625, GradNorm: 0.7, LR: 3e-4, Updated: true}}),
		ev(engine.EvWeightStep, 16, 2, 0, engine.PhaseWeights, engine.WeightStepData{RewardMean: 0, KeptFraction: 0, Entropy: 1.5,
			Stats: weights.Stats{Rollouts: 8}, Skipped: "nothing kept"}),
		ev(engine.EvPhaseEnded, 16, 2, 0, engine.PhaseWeights, engine.PhaseRecord{Kind: engine.PhaseWeights, Round: 1, Calls: 16,
			ValAfter: 0.25, ValPassAfter: 0.5, Entropy: ptr(1.375), KeptFraction: ptr(0.1875), TestAfter: ptr(0.0625)}),
		ev(engine.EvHarnessIteration, 40, 2, 1, engine.PhaseHarness, engine.HarnessIterationData{
			Result: search.IterationResult{Iteration: 1, Candidates: []string{"a", "b"}, BestScore: 0.4375, Calls: 24},
			Board:  []engine.BoardRow{{Hash: "a", Gain: 0.03125, HasGain: true}, {Hash: "b", Gain: 0.09375, HasGain: true}, {Hash: "old", Gain: 0.5, HasGain: true}}}),
		ev(engine.EvHarnessIteration, 48, 2, 2, engine.PhaseHarness, engine.HarnessIterationData{
			Result: search.IterationResult{Iteration: 2, Candidates: []string{"c"}, BestScore: 0.4375, Calls: 8}}),
		ev(engine.EvPhaseEnded, 48, 2, 2, engine.PhaseHarness, engine.PhaseRecord{Kind: engine.PhaseHarness, Round: 1, Calls: 32,
			ValAfter: 0.4375, ValPassAfter: 0.625, AuditGap: ptr(-0.015625)}),
		ev(engine.EvEval, 48, 2, 2, engine.PhaseHarness, engine.EvalData{Split: "test", Report: rep(8, 0.21875)}),
		ev(engine.EvRunFinished, 48, 2, 2, engine.PhaseHarness, engine.Summary{RunID: "r1", ModelCalls: 48, Rollouts: 24, EvalCalls: 100, EvalRollouts: 90,
			BestValMean: 0.4375, BestValMean8: ptr(0.40625), TestMean8: 0.21875, TestPass8: 0.46875, TestCI95: [2]float64{0.125, 0.3125}, TestK: 8}),
	}
	if _, err := db.AppendEvents("r1", recs...); err != nil {
		t.Fatal(err)
	}
	evs, err := engine.StoredEvents(db, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestEveryKindGivesItsScalars lists every scalar the stored run must
// give, at its x (model calls), with its value.
func TestEveryKindGivesItsScalars(t *testing.T) {
	pts, err := metrics.FromEvents(storedRun(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pts {
		got = append(got, fmt.Sprintf("%d %s=%g", p.Calls, p.Tag, p.Value))
	}
	want := []string{
		"0 eval/val/mean@2=0.125", "0 eval/val/maj@2=0.25", "0 eval/val/pass@2=0.375",
		"8 weights/step=1", "8 weights/reward_mean=0.3", "8 weights/kept_fraction=0.375", "8 weights/entropy=1.25",
		"8 weights/loss=2.0625", "8 weights/grad_norm=0.7", "8 weights/lr=0.0003",
		"16 weights/step=2", "16 weights/reward_mean=0", "16 weights/kept_fraction=0", "16 weights/entropy=1.5",
		"16 phase/val_mean=0.25", "16 phase/val_pass=0.5", "16 phase/weights_calls=16", "16 phase/entropy=1.375",
		"16 phase/kept_fraction=0.1875", "16 phase/test_mean=0.0625",
		"16 ledger/calls=16", "16 ledger/rollouts=8", "16 ledger/weight_phase_calls=16", "16 ledger/harness_phase_calls=0",
		"40 harness/iteration=1", "40 harness/best_score=0.4375", "40 harness/calls=24", "40 harness/paired_gain=0.09375",
		"48 harness/iteration=2", "48 harness/best_score=0.4375", "48 harness/calls=8",
		"48 phase/val_mean=0.4375", "48 phase/val_pass=0.625", "48 phase/harness_calls=32", "48 phase/audit_gap=-0.015625",
		"48 ledger/calls=48", "48 ledger/rollouts=24", "48 ledger/weight_phase_calls=16", "48 ledger/harness_phase_calls=32",
		"48 eval/test/mean@8=0.21875", "48 eval/test/maj@8=0.34375", "48 eval/test/pass@8=0.46875",
		"48 final/best_val_mean=0.4375", "48 final/best_val_mean@8=0.40625", "48 final/test_mean@8=0.21875", "48 final/test_pass@8=0.46875",
		"48 final/test_ci95_lo=0.125", "48 final/test_ci95_hi=0.3125",
		"48 ledger/calls=48", "48 ledger/rollouts=24", "48 ledger/eval_calls=100", "48 ledger/eval_rollouts=90",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scalars:\n got %q\nwant %q", got, want)
	}
	if p := pts[3]; p.Step != 1 || p.Round != 1 || p.Phase != "weights" || p.Seq != 3 {
		t.Errorf("first weight step's point %+v: want step 1, round 1, phase weights, seq 3", p)
	}
}

// TestOverflowingValueIsRefusedNamingTheEvent: stored JSON cannot hold
// an infinity, but a number past float64's range reads as one would; it
// is refused naming the event, never exported.
func TestOverflowingValueIsRefusedNamingTheEvent(t *testing.T) {
	data := []byte(`{"stats":{"rollouts":1,"updated":true,"loss":1e308,"lr":1e-3,"grad_norm":1},"entropy":1}`)
	if _, err := (&metrics.Extractor{}).Add(engine.Event{Seq: 6, Kind: engine.EvWeightStep, Data: data}); err != nil {
		t.Fatalf("a finite loss: %v", err)
	}
	data = []byte(`{"stats":{"rollouts":1,"updated":true,"loss":1e309},"entropy":1}`)
	_, err := (&metrics.Extractor{}).Add(engine.Event{Seq: 7, Kind: engine.EvWeightStep, Data: data})
	if err == nil || !strings.Contains(err.Error(), "event 7") {
		t.Fatalf("err %v, want one naming event 7", err)
	}
}

// TestJSONLAndCSVGiveTheSameValues writes the points both ways and
// reads them back: the same points, every float64 bit for bit.
func TestJSONLAndCSVGiveTheSameValues(t *testing.T) {
	pts, err := metrics.FromEvents(storedRun(t))
	if err != nil {
		t.Fatal(err)
	}
	pts = append(pts, metrics.Point{Tag: "x/third", Calls: 1, Value: 1.0 / 3})
	var j, c bytes.Buffer
	if err := metrics.WriteJSONL(&j, pts); err != nil {
		t.Fatal(err)
	}
	if err := metrics.WriteCSV(&c, pts); err != nil {
		t.Fatal(err)
	}
	fromJ, err := metrics.ReadJSONL(&j)
	if err != nil {
		t.Fatal(err)
	}
	fromC, err := metrics.ReadCSV(&c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJ, pts) || !reflect.DeepEqual(fromC, pts) {
		t.Errorf("read back differs:\njsonl %v\ncsv   %v\nwant  %v", fromJ, fromC, pts)
	}
	if _, err := metrics.ReadCSV(strings.NewReader(strings.Join(metrics.CSVHeader, ",") + "\nx,1,2,3,4,weights,5,abc\n")); err == nil || !strings.Contains(err.Error(), "line 2, column value") {
		t.Errorf("bad value: err %v, want one naming line 2 and the column", err)
	}
}

// TestTensorBoardFileDecodesWithPythonProtobuf writes the stored run's
// event file and decodes it with python3-protobuf against our .proto.
func TestTensorBoardFileDecodesWithPythonProtobuf(t *testing.T) {
	pts, err := metrics.FromEvents(storedRun(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "events.out.tfevents.1.whale")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := metrics.NewTensorBoard(f, 1.7e9)
	if err == nil {
		err = tb.Write(pts)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	metricstest.CheckDecoded(t, metricstest.PythonDecode(t, filepath.Join("..", ".."), path), pts, 1.7e9)
}
