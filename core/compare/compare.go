// Package compare puts runs side by side: how their configurations
// differ, their best val and test scores with intervals, the paired
// difference of their test scores on the tasks they share, the model
// calls of each ledger, and their val and test curves over model calls.
//
// It reads stored runs (configuration, resume point, events) and never
// writes.
package compare

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"whale/core/engine"
	"whale/core/eval"
)

// Input is one stored run as read from a workspace or its owner.
type Input struct {
	ID     string
	Status string
	Config json.RawMessage
	// Cursor is the run's resume point (its ledger), nil before the first.
	Cursor json.RawMessage
	Events []engine.Event
}

// Point is one value of a curve at x = model calls.
type Point struct {
	Calls int     `json:"calls"`
	Value float64 `json:"value"`
}

// Measure is a score with its 95 % bootstrap interval, its k and the
// model calls spent when it was measured.
type Measure struct {
	Mean  float64    `json:"mean"`
	CI95  [2]float64 `json:"ci95"`
	K     int        `json:"k"`
	Calls int        `json:"calls"`
}

// Run is one run's side of the comparison.
type Run struct {
	ID     string `json:"run_id"`
	Status string `json:"status"`
	Domain string `json:"domain"`
	// BestVal is the highest val mean@k measured; Test the run's final
	// test score (the latest test measurement while it runs); nil when
	// none was measured yet.
	BestVal *Measure `json:"best_val,omitempty"`
	Test    *Measure `json:"test,omitempty"`
	// Ledger is the model calls and rollouts by purpose, as of the run's
	// last resume point.
	Ledger engine.Ledger `json:"ledger"`
	// Val and Test curves: val mean@k and test mean@k over model calls.
	ValCurve  []Point `json:"val_curve"`
	TestCurve []Point `json:"test_curve"`

	cfg       engine.Config
	flat      map[string]string
	testTasks map[string]float64
}

// Diff is one configuration key whose values differ, a value per run.
type Diff struct {
	Key    string   `json:"key"`
	Values []string `json:"values"`
}

// Paired is run A's test score minus run B's on the tasks both measured:
// the mean of the per-task differences with its 95 % bootstrap interval.
type Paired struct {
	A     string     `json:"a"`
	B     string     `json:"b"`
	Tasks int        `json:"tasks"`
	Mean  float64    `json:"mean"`
	CI95  [2]float64 `json:"ci95"`
	// Why says why there is no difference (Tasks = 0).
	Why string `json:"why,omitempty"`
}

// Comparison is the whole comparison.
type Comparison struct {
	Runs   []Run    `json:"runs"`
	Diffs  []Diff   `json:"config_diffs"`
	Paired []Paired `json:"paired"`
}

// pairSeed seeds the paired difference's bootstrap.
const pairSeed = 1

// Build compares the runs, in the order given.
func Build(ins []Input) (Comparison, error) {
	var c Comparison
	for _, in := range ins {
		r, err := readRun(in)
		if err != nil {
			return c, err
		}
		c.Runs = append(c.Runs, r)
	}
	c.Diffs = diffs(c.Runs)
	for i := range c.Runs {
		for j := i + 1; j < len(c.Runs); j++ {
			c.Paired = append(c.Paired, pair(c.Runs[i], c.Runs[j]))
		}
	}
	return c, nil
}

func readRun(in Input) (Run, error) {
	r := Run{ID: in.ID, Status: in.Status, ValCurve: []Point{}, TestCurve: []Point{}}
	if err := json.Unmarshal(in.Config, &r.cfg); err != nil {
		return r, fmt.Errorf("compare: run %s: stored config: %w", in.ID, err)
	}
	r.Domain = r.cfg.Domain
	if len(in.Cursor) > 0 {
		var st engine.State
		if err := json.Unmarshal(in.Cursor, &st); err != nil {
			return r, fmt.Errorf("compare: run %s: resume point: %w", in.ID, err)
		}
		r.Ledger = st.Ledger
	}
	var raw map[string]any
	if err := json.Unmarshal(in.Config, &raw); err != nil {
		return r, fmt.Errorf("compare: run %s: stored config: %w", in.ID, err)
	}
	r.flat = map[string]string{}
	flatten("", raw, r.flat)
	for _, ev := range in.Events {
		switch ev.Kind {
		case engine.EvEval:
			p, err := ev.Payload()
			if err != nil {
				return r, fmt.Errorf("compare: run %s: %w", in.ID, err)
			}
			d := p.(engine.EvalData)
			m := Measure{Mean: d.Report.MeanAtK, CI95: d.Report.CI95, K: d.Report.K, Calls: ev.Calls}
			switch d.Split {
			case "val":
				r.ValCurve = append(r.ValCurve, Point{ev.Calls, m.Mean})
				if r.BestVal == nil || m.Mean > r.BestVal.Mean {
					r.BestVal = &m
				}
			case "test":
				r.TestCurve = append(r.TestCurve, Point{ev.Calls, m.Mean})
				r.Test, r.testTasks = &m, d.Tasks
			}
		}
	}
	return r, nil
}

// flatten writes a JSON value's leaves as dotted keys; a long or
// multi-line string (a harness's source) is named by its sha256.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	case string:
		if len(x) > 48 || strings.Contains(x, "\n") {
			sum := sha256.Sum256([]byte(x))
			out[prefix] = fmt.Sprintf("source %s (%d lines)", hex.EncodeToString(sum[:])[:12], strings.Count(x, "\n")+1)
			return
		}
		out[prefix] = x
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

// diffs lists the keys whose values are not all the same, sorted; a key
// a run lacks shows as "-".
func diffs(runs []Run) []Diff {
	keys := map[string]bool{}
	for _, r := range runs {
		for k := range r.flat {
			keys[k] = true
		}
	}
	var out []Diff
	for k := range keys {
		d := Diff{Key: k}
		same := true
		for i, r := range runs {
			v, ok := r.flat[k]
			if !ok {
				v = "-"
			}
			d.Values = append(d.Values, v)
			same = same && (i == 0 || v == d.Values[0])
		}
		if !same {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// pair is a's test score minus b's, task by task, where both measured
// the same tasks: the same domain and data seed (the splits), each task's
// mean over its k samples.
func pair(a, b Run) Paired {
	p := Paired{A: a.ID, B: b.ID}
	switch {
	case a.cfg.Domain != b.cfg.Domain || a.cfg.DataSeed != b.cfg.DataSeed:
		p.Why = "different tasks (domain or data seed differ)"
		return p
	case a.Test == nil || b.Test == nil:
		p.Why = "no test score yet"
		return p
	case a.testTasks == nil || b.testTasks == nil:
		p.Why = "per-task test scores not stored (a run made before whale kept them)"
		return p
	}
	var ids []string
	for id := range a.testTasks {
		if _, ok := b.testTasks[id]; ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		p.Why = "no test task in common"
		return p
	}
	sort.Strings(ids)
	ds := make([]float64, len(ids))
	for i, id := range ids {
		ds[i] = a.testTasks[id] - b.testTasks[id]
		p.Mean += ds[i]
	}
	p.Tasks, p.Mean = len(ids), p.Mean/float64(len(ids))
	p.CI95 = eval.Bootstrap(ds, pairSeed)
	return p
}
