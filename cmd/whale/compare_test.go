package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/engine"
	"whale/core/eval"
	"whale/core/store"
)

// comparedWorkspace stores three runs with val and test evaluations (no
// model work): two on the same tasks, one at another learning rate.
func comparedWorkspace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, id := range []string{"r-a", "r-b", "r-c"} {
		cfg, _ := engine.Preset("tiny", "math")
		if i == 2 {
			cfg.LR = 1e-3
		}
		raw, _ := json.Marshal(cfg)
		if err := db.CreateRun(id, raw, time.Unix(1.7e9, 0)); err != nil {
			t.Fatal(err)
		}
		ev := func(calls int, split string, mean float64, tasks map[string]float64) []byte {
			d, _ := json.Marshal(engine.EvalData{Split: split, Report: eval.Report{K: 2, MeanAtK: mean, CI95: [2]float64{mean - 0.05, mean + 0.05}}, Tasks: tasks})
			b, _ := json.Marshal(engine.Event{Kind: engine.EvEval, Calls: calls, Data: d})
			return b
		}
		off := float64(i) / 8
		if _, err := db.AppendEvents(id, ev(0, "val", 0.125, nil), ev(40, "val", 0.25+off, nil),
			ev(80, "test", 0.25+off, map[string]float64{"t1": off, "t2": 0.5})); err != nil {
			t.Fatal(err)
		}
		cur, _ := json.Marshal(engine.State{Ledger: engine.Ledger{TrainCalls: 50, SearchCalls: 30, EvalCalls: 20 + i}})
		if err := db.SetRunState(id, "finished", cur); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestCompareRunsPrintsScoresDiffsAndPairs(t *testing.T) {
	db := comparedWorkspace(t)
	out, err := runWhale(t, "compare", "r-a", "r-b", "r-c", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Runs []struct {
			ID      string `json:"run_id"`
			BestVal struct {
				Mean float64 `json:"mean"`
			} `json:"best_val"`
			Ledger engine.Ledger `json:"ledger"`
		} `json:"runs"`
		Diffs []struct {
			Key    string   `json:"key"`
			Values []string `json:"values"`
		} `json:"config_diffs"`
		Paired []struct {
			A, B  string
			Tasks int     `json:"tasks"`
			Mean  float64 `json:"mean"`
		} `json:"paired"`
	}
	lastJSONLine(t, out, &c)
	if len(c.Runs) != 3 || c.Runs[1].BestVal.Mean != 0.375 || c.Runs[2].Ledger.EvalCalls != 22 {
		t.Errorf("runs %+v", c.Runs)
	}
	if len(c.Diffs) != 1 || c.Diffs[0].Key != "lr" || c.Diffs[0].Values[2] != "0.001" {
		t.Errorf("diffs %+v, want lr alone", c.Diffs)
	}
	if len(c.Paired) != 3 || c.Paired[0].Tasks != 2 || c.Paired[0].Mean != -0.0625 {
		t.Errorf("paired %+v, want r-a − r-b = −0.0625 over 2 tasks first", c.Paired)
	}
	human, err := runWhale(t, "compare", "r-a", "r-c", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"config differences (1):", "lr", "r-a − r-c: -0.125 [", "50/30/20", "0.500 [0.450, 0.550] @2"} {
		if !strings.Contains(human, want) {
			t.Errorf("human output lacks %q:\n%s", want, human)
		}
	}
	if _, err := runWhale(t, "compare", "r-a", "--db", db); !isUsage(err) {
		t.Errorf("one run: %v, want a usage error", err)
	}
	if _, err := runWhale(t, "compare", "r-a", "r-a", "--db", db); !isUsage(err) {
		t.Errorf("a run twice: %v, want a usage error", err)
	}
	if _, err := runWhale(t, "compare", "r-a", "nope", "--db", db); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("missing run: %v, want an error naming it", err)
	}
	if _, err := runWhale(t, "compare", "r-a", "r-b", "--db", db, "--tui"); !isUsage(err) || !strings.Contains(err.Error(), "terminal") {
		t.Errorf("--tui without a terminal: %v, want a usage error", err)
	}
}
