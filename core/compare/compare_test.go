package compare

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"whale/core/engine"
	"whale/core/eval"
)

func cfgJSON(t *testing.T, mod func(*engine.Config)) json.RawMessage {
	c, err := engine.Preset("tiny", "math")
	if err != nil {
		t.Fatal(err)
	}
	mod(&c)
	b, _ := json.Marshal(c)
	return b
}

func evalEvent(t *testing.T, calls int, split string, mean float64, k int, tasks map[string]float64) engine.Event {
	b, _ := json.Marshal(engine.EvalData{Split: split, Report: eval.Report{K: k, MeanAtK: mean, CI95: [2]float64{mean - 0.1, mean + 0.1}}, Tasks: tasks})
	return engine.Event{Kind: engine.EvEval, Calls: calls, Data: b}
}

func TestBuildComparesScoresConfigsAndPairs(t *testing.T) {
	a := Input{ID: "a", Status: "finished", Config: cfgJSON(t, func(c *engine.Config) {}),
		Cursor: json.RawMessage(`{"ledger":{"train_calls":40,"search_calls":20,"eval_calls":30}}`),
		Events: []engine.Event{
			evalEvent(t, 0, "val", 0.1, 1, nil), evalEvent(t, 30, "val", 0.4, 1, nil), evalEvent(t, 60, "val", 0.3, 1, nil),
			evalEvent(t, 60, "test", 0.5, 2, map[string]float64{"t1": 1, "t2": 0.5, "t3": 0}),
		}}
	b := Input{ID: "b", Status: "running", Config: cfgJSON(t, func(c *engine.Config) { c.LR, c.Harness = 1e-3, "SYSTEM_PROMPT = 'x'\n" }),
		Events: []engine.Event{
			evalEvent(t, 0, "val", 0.1, 1, nil),
			evalEvent(t, 50, "test", 0.25, 2, map[string]float64{"t1": 0.5, "t2": 0.5, "t4": 1}),
		}}
	c := Input{ID: "c", Status: "finished", Config: cfgJSON(t, func(c *engine.Config) { c.DataSeed = 7 }),
		Events: []engine.Event{evalEvent(t, 10, "test", 0.2, 2, map[string]float64{"t1": 0})}}
	got, err := Build([]Input{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	ra := got.Runs[0]
	if ra.BestVal == nil || ra.BestVal.Mean != 0.4 || ra.BestVal.Calls != 30 || ra.Test == nil || ra.Test.Mean != 0.5 || ra.Test.K != 2 {
		t.Errorf("run a: best val %+v, test %+v", ra.BestVal, ra.Test)
	}
	if ra.Ledger.TrainCalls != 40 || ra.Ledger.SearchCalls != 20 || ra.Ledger.EvalCalls != 30 {
		t.Errorf("run a's ledger %+v", ra.Ledger)
	}
	if want := []Point{{0, 0.1}, {30, 0.4}, {60, 0.3}}; !reflect.DeepEqual(ra.ValCurve, want) {
		t.Errorf("run a's val curve %v, want %v", ra.ValCurve, want)
	}
	var keys []string
	for _, d := range got.Diffs {
		keys = append(keys, d.Key)
	}
	if want := []string{"data_seed", "harness", "lr"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("differing keys %v, want %v", keys, want)
	}
	for _, d := range got.Diffs {
		if d.Key == "harness" && (d.Values[0] != "h0" || d.Values[1] == "h0" || len(d.Values[1]) > 40) {
			t.Errorf("harness values %q: want h0 and a source named by its hash", d.Values)
		}
	}
	if len(got.Paired) != 3 {
		t.Fatalf("%d pairs, want 3", len(got.Paired))
	}
	// a − b on t1, t2: (1 − 0.5 + 0.5 − 0.5) / 2.
	if p := got.Paired[0]; p.A != "a" || p.B != "b" || p.Tasks != 2 || math.Abs(p.Mean-0.25) > 1e-12 || p.CI95[0] > p.Mean || p.CI95[1] < p.Mean {
		t.Errorf("a − b: %+v, want 2 tasks, mean 0.25 inside its interval", p)
	}
	for _, p := range got.Paired[1:] {
		if p.Tasks != 0 || p.Why == "" {
			t.Errorf("%s − %s: %+v, want no difference (other data seed) with the reason", p.A, p.B, p)
		}
	}
}

func TestPairWithoutStoredTasksSaysWhy(t *testing.T) {
	in := func(id string) Input {
		return Input{ID: id, Config: cfgJSON(t, func(*engine.Config) {}), Events: []engine.Event{evalEvent(t, 5, "test", 0.2, 2, nil)}}
	}
	got, err := Build([]Input{in("x"), in("y")})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Paired[0]; p.Tasks != 0 || p.Why != "per-task test scores not stored (a run made before whale kept them)" {
		t.Errorf("pair %+v", p)
	}
	if len(got.Diffs) != 0 {
		t.Errorf("diffs %v, want none", got.Diffs)
	}
}
