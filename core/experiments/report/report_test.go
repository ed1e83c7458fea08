package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
)

// phasePattern is the order of phases each synthetic condition runs.
var phasePattern = map[string][]string{
	"weight-only":    {"weights", "weights", "weights", "weights"},
	"harness-only":   {"harness", "harness"},
	"staged":         {"weights", "harness"},
	"fast-slow":      {"harness", "weights", "harness", "weights"},
	"whale-fixed":    {"weights", "harness", "weights", "harness", "weights", "harness"},
	"whale-adaptive": {"weights", "harness", "weights", "harness"},
}

// synthBest is each condition's best test mean@8 per seed (1, 2, 3) on each
// domain: hand-picked so the means, CIs and verdicts are known.
var synthBest = map[string]map[string][3]float64{
	"math": {
		"weight-only":    {0.20, 0.22, 0.24},
		"harness-only":   {0.10, 0.30, 0.20},
		"staged":         {0.25, 0.25, 0.28},
		"fast-slow":      {0.21, 0.23, 0.22},
		"whale-fixed":    {0.31, 0.32, 0.36},
		"whale-adaptive": {0.30, 0.50, 0.33},
	},
	"searchqa": {
		"weight-only":    {0.40, 0.42, 0.41},
		"harness-only":   {0.50, 0.52, 0.55},
		"staged":         {0.45, 0.47, 0.46},
		"fast-slow":      {0.43, 0.44, 0.45},
		"whale-fixed":    {0.52, 0.51, 0.56},
		"whale-adaptive": {0.53, 0.50, 0.54},
	},
}

// synthRun builds one run whose curve climbs from 0.1 towards its best in
// equal steps, with phase lengths that differ per seed so boundaries of
// different seeds never line up.
func synthRun(domain, cond string, seed uint64) Run {
	best := synthBest[domain][cond][seed-1]
	pat := phasePattern[cond]
	r := Run{
		Condition: cond, Domain: domain, Seed: seed, Done: true,
		RunID:         fmt.Sprintf("%s-%s-%d", domain, cond, seed),
		BestTestMean8: best,
		TestCI95:      [2]float64{best - 0.03, best + 0.03},
		EvalRollouts:  500,
		Phases:        len(pat),
		Curve:         []Point{{Phase: PhaseStart, Val: 0.1, Test: 0.1, HasTest: true}},
		Compute:       time.Duration(seed) * time.Minute,
	}
	at, round := 0, 0
	for i, ph := range pat {
		if ph == PhaseWeights || i == 0 {
			round++
		}
		n := 12000 / len(pat)
		n -= int(seed) * 37
		v := 0.1 + (best-0.1)*float64(i+1)/float64(len(pat))
		r.Curve = append(r.Curve, Point{Rollouts: at + n, PhaseStart: at, Phase: ph, Round: round, Val: v + 0.01, Test: v, HasTest: true})
		at += n
	}
	r.Rollouts = at
	return r
}

// synthRuns is 3 seeds × 6 conditions × 2 domains, less staged seed 3 on
// searchqa (never started), with whale-adaptive seed 2 on math unfinished,
// whale-fixed seed 3 on searchqa over budget and weight-only seed 1 on math
// without a compute time (the others took seed minutes).
func synthRuns() []Run {
	var runs []Run
	for _, d := range []string{"searchqa", "math"} { // not sorted: Write must sort
		for _, c := range Conditions {
			if _, ok := synthBest[d][c]; !ok {
				continue // vote-only: a condition these runs predate
			}
			for s := uint64(1); s <= 3; s++ {
				if d == "searchqa" && c == "staged" && s == 3 {
					continue
				}
				r := synthRun(d, c, s)
				if d == "math" && c == "whale-adaptive" && s == 2 {
					r.Done = false
					r.BestTestMean8 = 0.99 // must never reach an average
				}
				if d == "searchqa" && c == "whale-fixed" && s == 3 {
					r.Rollouts = 12500 // over the 12,000 budget TestWrite sets
				}
				if d == "math" && c == WeightOnly && s == 1 {
					r.Compute = 0
				}
				runs = append(runs, r)
			}
		}
	}
	return runs
}

func findCell(t *testing.T, cells []Cell, domain, cond string) Cell {
	t.Helper()
	for _, c := range cells {
		if c.Domain == domain && c.Condition == cond {
			return c
		}
	}
	t.Fatalf("no cell for %s on %s", cond, domain)
	return Cell{}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestTableMeansAndCIs(t *testing.T) {
	cells := Table(synthRuns())
	if len(cells) != 2*len(Conditions) {
		t.Fatalf("Table gave %d cells, want %d", len(cells), 2*len(Conditions))
	}
	if cells[0].Domain != "math" || cells[0].Condition != "weight-only" {
		t.Errorf("first cell is %s/%s, want math/weight-only", cells[0].Domain, cells[0].Condition)
	}
	cases := []struct {
		domain, cond string
		n            int
		mean, half   float64 // half-width of the CI, by hand
	}{
		// sd 0.02, t(0.975,2) = 4.303: 4.303·0.02/√3
		{"math", "weight-only", 3, 0.22, 4.303 * 0.02 / math.Sqrt(3)},
		// sd 0.1
		{"math", "harness-only", 3, 0.20, 4.303 * 0.1 / math.Sqrt(3)},
		// unfinished seed 2 (0.99) left out: seeds 0.30 and 0.33, sd 0.03/√2, t(0.975,1) = 12.706
		{"math", "whale-adaptive", 2, 0.315, 12.706 * (0.03 / math.Sqrt(2)) / math.Sqrt(2)},
		// missing seed 3: 0.45 and 0.47
		{"searchqa", "staged", 2, 0.46, 12.706 * (0.02 / math.Sqrt(2)) / math.Sqrt(2)},
	}
	for _, tc := range cases {
		c := findCell(t, cells, tc.domain, tc.cond)
		if c.N != tc.n || !near(c.Mean, tc.mean) {
			t.Errorf("%s/%s: N %d mean %.5f, want N %d mean %.5f", tc.domain, tc.cond, c.N, c.Mean, tc.n, tc.mean)
		}
		// Hand values use t rounded to 3 decimals, hence the 1e-3 relative slack.
		if lo, hi := tc.mean-tc.half, tc.mean+tc.half; math.Abs(c.CI95[0]-lo) > 1e-3*tc.half || math.Abs(c.CI95[1]-hi) > 1e-3*tc.half {
			t.Errorf("%s/%s: CI [%.5f, %.5f], want [%.5f, %.5f]", tc.domain, tc.cond, c.CI95[0], c.CI95[1], lo, hi)
		}
		if c.Seeds != 3 {
			t.Errorf("%s/%s: Seeds %d, want 3", tc.domain, tc.cond, c.Seeds)
		}
	}
	if c := findCell(t, cells, "math", "whale-adaptive"); len(c.Unfinished) != 1 || c.Unfinished[0] != 2 || len(c.Missing) != 0 {
		t.Errorf("math/whale-adaptive: unfinished %v missing %v, want [2] []", c.Unfinished, c.Missing)
	}
	if c := findCell(t, cells, "searchqa", "staged"); len(c.Missing) != 1 || c.Missing[0] != 3 || c.Runs != 2 {
		t.Errorf("searchqa/staged: missing %v runs %d, want [3] 2", c.Missing, c.Runs)
	}
	if c := findCell(t, cells, "math", "whale-fixed"); c.Phases != 6 {
		t.Errorf("math/whale-fixed: phases %g, want 6", c.Phases)
	}
}

func TestTableOneSeedUsesRunCI(t *testing.T) {
	r := synthRun("math", "staged", 1)
	r.TestCI95 = [2]float64{0.2, 0.31}
	c := findCell(t, Table([]Run{r}), "math", "staged")
	if c.N != 1 || c.Mean != r.BestTestMean8 || c.CI95 != r.TestCI95 {
		t.Errorf("one seed: N %d mean %g CI %v, want 1 %g %v", c.N, c.Mean, c.CI95, r.BestTestMean8, r.TestCI95)
	}
	if c.ReachSeeds != 0 || c.ReachRollouts != -1 {
		t.Errorf("no weight-only run: reach %d over %d seeds, want -1 over 0", c.ReachRollouts, c.ReachSeeds)
	}
	if w := findCell(t, Table([]Run{r}), "math", "whale-fixed"); w.N != 0 || w.Runs != 0 || len(w.Missing) != 1 {
		t.Errorf("absent condition: %+v, want an empty cell missing seed 1", w)
	}
}

func curve(vals ...float64) []Point {
	c := []Point{{Phase: PhaseStart, Test: vals[0], Val: vals[0], HasTest: true}}
	for i, v := range vals[1:] {
		c = append(c, Point{Rollouts: 1000 * (i + 1), PhaseStart: 1000 * i, Phase: PhaseWeights, Round: i + 1, Test: v, Val: v, HasTest: true})
	}
	return c
}

func TestReachRollouts(t *testing.T) {
	wo := Run{Condition: WeightOnly, Domain: "math", Seed: 1, Done: true, Curve: curve(0.1, 0.3, 0.5, 0.4)}
	if got := ReachRollouts(wo, wo); got != 2000 {
		t.Errorf("weight-only against itself: %d, want its own peak at 2000", got)
	}
	fast := Run{Condition: HarnessOnly, Domain: "math", Seed: 1, Done: true, Curve: curve(0.1, 0.2, 0.6, 0.7)}
	if got := ReachRollouts(fast, wo); got != 2000 {
		t.Errorf("reaches at second boundary: %d, want 2000", got)
	}
	fast.Curve = curve(0.1, 0.5, 0.2)
	if got := ReachRollouts(fast, wo); got != 1000 {
		t.Errorf("reaches exactly the peak: %d, want 1000", got)
	}
	slow := Run{Condition: "staged", Domain: "math", Seed: 1, Done: true, Curve: curve(0.1, 0.2, 0.49)}
	if got := ReachRollouts(slow, wo); got != -1 {
		t.Errorf("never reaches: %d, want -1", got)
	}
	// Without test points both runs are read on val: val peak 0.6 at 3000.
	valOnly := Run{Condition: "staged", Domain: "math", Seed: 1, Done: true, Curve: curve(0.1, 0.6)}
	for i := range valOnly.Curve {
		valOnly.Curve[i].HasTest = false
		valOnly.Curve[i].Test = 0
	}
	wo.Curve[3].Val = 0.6
	if got := ReachRollouts(valOnly, wo); got != 1000 {
		t.Errorf("val fallback: %d, want 1000", got)
	}

	// Through Table: median over seeds, "never" ranking last.
	mk := func(cond string, seed uint64, c []Point) Run {
		return Run{Condition: cond, Domain: "math", Seed: seed, Done: true, Curve: c, RunID: fmt.Sprint(cond, seed)}
	}
	runs := []Run{
		mk(WeightOnly, 1, curve(0.1, 0.3, 0.5)), mk(WeightOnly, 2, curve(0.1, 0.5)), mk(WeightOnly, 3, curve(0.1, 0.2)),
		mk(HarnessOnly, 1, curve(0.1, 0.6)),                                // 1000
		mk(HarnessOnly, 2, curve(0.1, 0.4, 0.4)),                           // never
		mk(HarnessOnly, 3, curve(0.1, 0.1, 0.3)),                           // 2000
		mk("staged", 1, curve(0.1, 0.2)), mk("staged", 2, curve(0.1, 0.2)), // never, never
	}
	cells := Table(runs)
	if c := findCell(t, cells, "math", HarnessOnly); c.ReachRollouts != 2000 || c.ReachSeeds != 3 {
		t.Errorf("harness-only median reach %d over %d seeds, want 2000 over 3", c.ReachRollouts, c.ReachSeeds)
	}
	if c := findCell(t, cells, "math", "staged"); c.ReachRollouts != -1 || c.ReachSeeds != 2 {
		t.Errorf("staged median reach %d over %d seeds, want -1 over 2", c.ReachRollouts, c.ReachSeeds)
	}
	if c := findCell(t, cells, "math", WeightOnly); c.ReachRollouts != 1000 {
		t.Errorf("weight-only own peak median %d, want 1000 (peaks at 2000, 1000, 1000)", c.ReachRollouts)
	}
	if got := medianReach([]int{-1, 3000, 1000, 2000}); got != 2500 {
		t.Errorf("even median %d, want 2500", got)
	}
	if got := medianReach([]int{-1, -1, 1000, 2000}); got != -1 {
		t.Errorf("even median with never in the middle %d, want -1", got)
	}
}

func TestAttribute(t *testing.T) {
	r := Run{Condition: WhaleFixed, Domain: "math", Seed: 1, Done: true, Curve: []Point{
		{Phase: PhaseStart, Test: 0.10, Val: 0.12, HasTest: true},
		{Phase: PhaseWeights, Round: 1, PhaseStart: 0, Rollouts: 4000, Test: 0.15, Val: 0.20, HasTest: true},
		{Phase: PhaseHarness, Round: 1, PhaseStart: 4000, Rollouts: 6000, Test: 0.18, Val: 0.22, HasTest: true},
		{Phase: PhaseWeights, Round: 2, PhaseStart: 6000, Rollouts: 10000, Test: 0.17, Val: 0.25, HasTest: true},
		{Phase: PhaseHarness, Round: 2, PhaseStart: 10000, Rollouts: 12000, Test: 0.25, Val: 0.30, HasTest: true},
		// No test score at this boundary: the gain falls back to val.
		{Phase: PhaseWeights, Round: 3, PhaseStart: 12000, Rollouts: 15000, Val: 0.34},
	}}
	got := Attribute(r)
	want := []Attribution{
		{Round: 1, WeightGain: 5, HarnessGain: 3, Weights: true, Harness: true, WeightRollouts: 4000, HarnessRollouts: 2000},
		{Round: 2, WeightGain: -1, HarnessGain: 8, Weights: true, Harness: true, WeightRollouts: 4000, HarnessRollouts: 2000},
		{Round: 3, WeightGain: 4, Weights: true, WeightRollouts: 3000},
	}
	if len(got) != len(want) {
		t.Fatalf("Attribute gave %d rounds, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Round != w.Round || !near(g.WeightGain, w.WeightGain) || !near(g.HarnessGain, w.HarnessGain) ||
			g.Weights != w.Weights || g.Harness != w.Harness || g.WeightRollouts != w.WeightRollouts || g.HarnessRollouts != w.HarnessRollouts {
			t.Errorf("round %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestBottleneck(t *testing.T) {
	for _, tc := range []struct {
		w, h float64
		want string
	}{
		{10, 2, "weights look like"}, {1, 6, "harness looks like"}, {3, 3.8, "unclear"}, {0.5, -0.9, "unclear"},
	} {
		if got := bottleneck(tc.w, tc.h); !strings.Contains(got, tc.want) {
			t.Errorf("bottleneck(%g, %g) = %q, want it to say %q", tc.w, tc.h, got, tc.want)
		}
	}
}

func TestCompareVerdicts(t *testing.T) {
	runs := synthRuns()
	// Paired diffs 0.11, 0.10, 0.12: CI well above 0.
	if d := Compare(runs, "math", WhaleFixed, WeightOnly); d.N != 3 || !near(d.Mean, 0.11) || d.Verdict() != "beats" {
		t.Errorf("whale-fixed vs weight-only on math: %+v %s, want N 3 mean 0.11 beats", d, d.Verdict())
	}
	// Paired diffs 0.21, 0.02, 0.16: wide CI across 0.
	if d := Compare(runs, "math", WhaleFixed, HarnessOnly); d.Verdict() != "within noise of" {
		t.Errorf("whale-fixed vs harness-only on math: %+v %s, want within noise", d, d.Verdict())
	}
	if d := Compare(runs, "math", WeightOnly, WhaleFixed); d.Verdict() != "loses to" {
		t.Errorf("weight-only vs whale-fixed: %s, want loses to", d.Verdict())
	}
	// Only seeds both finished pair up: whale-adaptive seed 2 is unfinished.
	if d := Compare(runs, "math", WhaleAdaptive, WeightOnly); d.N != 2 {
		t.Errorf("whale-adaptive pairs %d seeds, want 2", d.N)
	}
	one := []Run{synthRun("math", WhaleFixed, 1), synthRun("math", WeightOnly, 1)}
	if d := Compare(one, "math", WhaleFixed, WeightOnly); d.Verdict() != "cannot be compared with" {
		t.Errorf("one paired seed: %s, want cannot be compared", d.Verdict())
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	runs := synthRuns()
	meta := Meta{
		Command: "whale bench conditions --domain all --preset small --seeds 3",
		Preset:  "small", Budget: 12000, Seeds: 3, CurveK: 2,
		Notes:   []string{"The base model is the built-in tiny decoder."},
		History: "## Earlier benches\n\nAn older finding.\n",
	}
	if err := Write(dir, runs, meta); err != nil {
		t.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	md, csvBytes := read(ResultsMD), read(ResultsCSV)
	pngs := map[string][]byte{"math": read("math.png"), "searchqa": read("searchqa.png")}

	rows, err := csv.NewReader(bytes.NewReader(csvBytes)).ReadAll()
	if err != nil {
		t.Fatalf("results.csv does not parse: %v", err)
	}
	if got := strings.Join(rows[0], ","); !strings.HasPrefix(got, "condition,domain,seed,best_test_mean_at_8,rollouts") {
		t.Errorf("CSV header %q lacks the fixed prefix", got)
	}
	if len(rows)-1 != len(runs) {
		t.Errorf("CSV has %d rows, want one per run (%d)", len(rows)-1, len(runs))
	}
	if rows[1][0] != "weight-only" || rows[1][1] != "math" || rows[1][2] != "1" || rows[1][3] != "0.2000" || rows[1][4] != "11852" {
		t.Errorf("first CSV row %v, want math weight-only seed 1 first, 4-decimal fractions", rows[1])
	}
	for _, row := range rows[1:] {
		if row[1] == "math" && row[0] == "whale-adaptive" && row[2] == "2" && (row[3] != "" || row[6] != "false") {
			t.Errorf("unfinished run's row %v: want empty score and done=false", row)
		}
	}
	if rows[0][11] != "compute_s" || rows[1][11] != "" || rows[2][11] != "120.0" {
		t.Errorf("compute_s column: header %q, math weight-only seeds 1 and 2 %q %q; want empty (no record) and 120.0",
			rows[0][11], rows[1][11], rows[2][11])
	}

	for d, b := range pngs {
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s.png does not decode: %v", d, err)
		}
		if sz := img.Bounds().Size(); sz.X != ChartWidth || sz.Y != ChartHeight {
			t.Errorf("%s.png is %v, want %dx%d", d, sz, ChartWidth, ChartHeight)
		}
	}

	text := string(md)
	for _, c := range Conditions {
		if !strings.Contains(text, "| "+c+" |") {
			t.Errorf("RESULTS.md has no table row for %s", c)
		}
	}
	for _, want := range []string{
		"```\n" + meta.Command + "\n```", meta.Notes[0], "(math.png)", "(searchqa.png)",
		"whale-adaptive: 2 of 3 seeds finished (seed 2 unfinished)",
		"staged: 2 of 3 seeds finished (seed 3 never started)",
		"| weight-only | 22.0 | 17.0 – 27.0 | 3 of 3 |",
		// 34 runs with a record took 68 min in all (seed minutes each);
		// math weight-only seed 1 has none.
		"- Compute: 1 h 08 min summed over 34 runs",
		"; 1 finished run without a record",
		"| 2.5 min (2 of 3 runs) |",
		"| 11,556 | — | 2.0 min |",
		"whale-fixed beats weight-only (+11.0 points",
		"is within noise of harness-only",
		"### whale-fixed on math",
		// whale-fixed on math: each of 6 phases gains (best − 0.1)/6, bests 0.31, 0.32, 0.36;
		// phases are 2000 − 37·seed rollouts long.
		"| 1 | +3.8 | +3.8 | 1,926 | 1,926 |",
		// harness-only's first of 2 phases gains (best − 0.1)/2, bests 0.10, 0.30, 0.20.
		"Harness search on the base weights (harness-only's first harness phase, mean over 3 seeds): +5.0 points.",
		"Harness phases after the first weight phase in whale-fixed: +3.8 points per phase (mean over 9 phases).",
		"whale-fixed: 1 run over the budget of 12,000 model calls (most: 12,500, run searchqa-whale-fixed-3)",
		"- Budget per run: 12,000 model calls",
		"Gains are points of test mean@2",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	if strings.Contains(text, "99.0") {
		t.Errorf("RESULTS.md shows the unfinished run's score")
	}
	if !strings.HasSuffix(text, "## Earlier benches\n\nAn older finding.\n") {
		t.Errorf("RESULTS.md does not end with the history it was given:\n%s", text[max(0, len(text)-300):])
	}

	// Same input, any order → same bytes.
	dir2 := filepath.Join(t.TempDir(), "again")
	rev := make([]Run, len(runs))
	for i, r := range runs {
		rev[len(runs)-1-i] = r
	}
	if err := Write(dir2, rev, meta); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ResultsMD, ResultsCSV, "math.png", "searchqa.png"} {
		a, b := read(name), func() []byte { b, _ := os.ReadFile(filepath.Join(dir2, name)); return b }()
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes of the same runs", name)
		}
	}
}

// TestAReportFromTheRecordSaysWhatItCannotSee: read from a record of
// finished runs alone, a seed the record lacks may be under way, so the
// report says it has not finished, not that it never started.
func TestAReportFromTheRecordSaysWhatItCannotSee(t *testing.T) {
	dir := t.TempDir()
	var runs []Run
	for _, r := range synthRuns() {
		if r.Done {
			runs = append(runs, r) // a record holds finished runs only
		}
	}
	meta := Meta{Command: "whale bench conditions --report-only", Preset: "small", Budget: 12000, Seeds: 3, FromRecord: true}
	if err := Write(dir, runs, meta); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ResultsMD))
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, want := range []string{
		"staged: 2 of 3 seeds finished (seed 3 not finished yet)",
		"whale-adaptive: 2 of 3 seeds finished (seed 2 not finished yet)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("RESULTS.md from a record lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "never started") || strings.Contains(text, "not in the store") {
		t.Errorf("RESULTS.md from a record claims to know what the store holds")
	}
}

func TestWriteRejectsBadRuns(t *testing.T) {
	good := synthRun("math", WeightOnly, 1)
	cases := []struct {
		name  string
		edit  func(r *Run) []Run
		wants []string
	}{
		{"unknown condition", func(r *Run) []Run { r.Condition = "whale-turbo"; return []Run{*r} }, []string{"math-weight-only-1", `"whale-turbo"`}},
		{"bad domain", func(r *Run) []Run { r.Domain = "../etc"; return []Run{*r} }, []string{"math-weight-only-1", "domain"}},
		{"duplicate", func(r *Run) []Run { s := *r; s.RunID = "other"; return []Run{*r, s} }, []string{"math-weight-only-1", "other"}},
		{"bad phase", func(r *Run) []Run { r.Curve[1].Phase = "search"; return []Run{*r} }, []string{"curve[1]", `"search"`}},
		{"not a fraction", func(r *Run) []Run { r.BestTestMean8 = 23.5; return []Run{*r} }, []string{"best test mean@8", "23.5"}},
		{"rollouts go back", func(r *Run) []Run { r.Curve[2].Rollouts = 1; r.Curve[2].PhaseStart = 0; return []Run{*r} }, []string{"curve[2]", "go back"}},
	}
	for _, tc := range cases {
		r := good
		r.Curve = append([]Point(nil), good.Curve...)
		dir := filepath.Join(t.TempDir(), "out")
		err := Write(dir, tc.edit(&r), Meta{})
		if err == nil {
			t.Errorf("%s: Write accepted it", tc.name)
			continue
		}
		for _, w := range tc.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", tc.name, err, w)
			}
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("%s: Write created %s before rejecting the runs", tc.name, dir)
		}
	}
}

func TestChartWithNothingFinished(t *testing.T) {
	r := synthRun("chess", WhaleFixed, 1)
	r.Done = false
	b, err := Chart([]Run{r}, "chess", Meta{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("chart does not decode: %v", err)
	}
	if sz := img.Bounds().Size(); sz.X != ChartWidth || sz.Y != ChartHeight {
		t.Errorf("chart is %v, want %dx%d", sz, ChartWidth, ChartHeight)
	}
	md := string(Markdown([]Run{r}, Meta{Command: "whale bench conditions --domain chess"}))
	if !strings.Contains(md, "No run finished on chess") || !strings.Contains(md, "whale-fixed: 0 of 1 seeds finished (seed 1 unfinished)") {
		t.Errorf("RESULTS.md does not say plainly that nothing finished:\n%s", md)
	}
}

func TestNiceTicks(t *testing.T) {
	labels := func(ts []plot.Tick) string {
		var l []string
		for _, tk := range ts {
			if tk.Label != "" {
				l = append(l, tk.Label)
			}
		}
		return strings.Join(l, " ")
	}
	if got := labels(niceTicks{rolloutLabel}.Ticks(0, 12666)); got != "0 2,000 4,000 6,000 8,000 10,000 12,000" {
		t.Errorf("rollout ticks %q", got)
	}
	if got := labels(niceTicks{pointLabel}.Ticks(7, 56)); got != "10 20 30 40 50" {
		t.Errorf("score ticks %q", got)
	}
	if got := labels(niceTicks{pointLabel}.Ticks(0.4, 1.1)); got != "0.4 0.5 0.6 0.7 0.8 0.9 1 1.1" {
		t.Errorf("narrow score ticks %q", got)
	}
}

// pairRuns makes finished runs of conditions a and b on math, one per
// seed, with the given best test scores; b's runs are listed in reverse
// seed order, so pairing by position instead of by seed mismatches them.
func pairRuns(a, b []float64) []Run {
	var runs []Run
	for i, s := range a {
		runs = append(runs, Run{Domain: "math", Condition: WhaleFixed, Seed: uint64(i + 1), Done: true, BestTestMean8: s})
	}
	for i := len(b) - 1; i >= 0; i-- {
		runs = append(runs, Run{Domain: "math", Condition: WeightOnly, Seed: uint64(i + 1), Done: true, BestTestMean8: b[i]})
	}
	return runs
}

// Seeds that differ a lot from each other (0.2 … 0.7) but where A leads B
// by 0.02–0.04 on each: only the paired difference sees the lead. Unpaired,
// the two conditions' intervals overlap almost entirely.
func TestOnlyPairingSaysBeats(t *testing.T) {
	a := []float64{0.22, 0.53, 0.74, 0.41}
	b := []float64{0.20, 0.50, 0.70, 0.38}
	d := Compare(pairRuns(a, b), "math", WhaleFixed, WeightOnly)
	if d.N != 4 || !near(d.Mean, 0.03) || d.Verdict() != "beats" {
		t.Fatalf("paired by seed: %+v %q, want N 4, mean 0.03, beats", d, d.Verdict())
	}
	// The same scores unpaired: per-condition intervals overlap, so the
	// verdict rests on the pairing.
	_, loA, _ := MeanCI(a)
	_, _, hiB := MeanCI(b)
	if !(loA < hiB) {
		t.Fatalf("test data: unpaired intervals do not overlap (A from %.3f, B to %.3f)", loA, hiB)
	}
	// Paired across the wrong seeds (1↔2, 3↔4) the differences are wild
	// and the lead is within noise: the verdict depends on pairing right.
	shuffled := []float64{b[1], b[0], b[3], b[2]}
	if v := Compare(pairRuns(a, shuffled), "math", WhaleFixed, WeightOnly).Verdict(); v != "within noise of" {
		t.Fatalf("mispaired: %q, want within noise of", v)
	}
}

// A constant +0.1 on every seed gives a zero-width interval; it says the
// seeds changed nothing, so it is reported as the same on every seed,
// never as "beats". Identical scores are "identical", not "within noise".
func TestSameDifferenceOnEverySeedIsNotBeats(t *testing.T) {
	a := []float64{0.6, 0.3, 0.45}
	b := []float64{0.5, 0.2, 0.35} // 0.1 lower on each seed (up to float rounding)
	d := Compare(pairRuns(a, b), "math", WhaleFixed, WeightOnly)
	if !d.Same || d.Verdict() != "differs by the same amount on every seed from" || !near(d.Mean, 0.1) {
		t.Fatalf("constant +0.1: %+v %q", d, d.Verdict())
	}
	d = Compare(pairRuns(a, a), "math", WhaleFixed, WeightOnly)
	if !d.Same || d.Verdict() != "is identical on every seed to" || d.Mean != 0 {
		t.Fatalf("identical: %+v %q", d, d.Verdict())
	}
	// Two seeds alike and one apart is ordinary noise.
	d = Compare(pairRuns(a, []float64{0.5, 0.2, 0.30}), "math", WhaleFixed, WeightOnly)
	if d.Same {
		t.Fatalf("0.1, 0.1, 0.15 called the same on every seed: %+v", d)
	}
	var md bytes.Buffer
	writeVerdict(&md, pairRuns(a, b), []Cell{{Domain: "math", Condition: WhaleFixed, N: 3, Mean: 0.45}, {Domain: "math", Condition: WeightOnly, N: 3, Mean: 0.35}}, "math")
	if s := md.String(); strings.Contains(s, "beats") || !strings.Contains(s, "on each of 3 paired seeds") {
		t.Fatalf("RESULTS text for a constant difference:\n%s", s)
	}
}

// TestHealthTable checks the weight-phase health table: means over
// finished seeds only, runs without the figures left out of the means
// that need them, and no row for a condition without finished runs.
func TestHealthTable(t *testing.T) {
	mk := func(cond string, seed uint64, done bool, ent float64, hasEnt bool, start, end float64) Run {
		r := Run{Condition: cond, Domain: "math", Seed: seed, Done: done, RunID: fmt.Sprintf("%s-%d", cond, seed),
			BestTestMean8: 0.2, BestTestPass8: 0.2 + 0.1*float64(seed), Entropy: ent, HasEntropy: hasEnt,
			Curve: []Point{{Phase: PhaseStart, Val: 0.1, ValPass: 0.1 + start, HasPass: true},
				{Phase: PhaseWeights, Rollouts: 10, Val: 0.2, ValPass: 0.2 + end, HasPass: true}}}
		return r
	}
	runs := []Run{
		mk(WeightOnly, 1, true, 1.0, true, 0.20, 0.02),
		mk(WeightOnly, 2, true, 2.0, true, 0.10, 0.04),
		mk(WeightOnly, 3, false, 9.0, true, 0.9, 0.9), // unfinished: never averaged
		mk(HarnessOnly, 1, true, 0, false, 0.10, 0.10),
	}
	var b bytes.Buffer
	writeHealth(&b, runs, "math")
	got := b.String()
	for _, want := range []string{
		"| weight-only | 1.500 | +15.0 → +3.0 | +15.0 |",
		"| harness-only | — | +10.0 → +10.0 | +10.0 |",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("health table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "staged") {
		t.Fatalf("a condition without finished runs has a row:\n%s", got)
	}
	b.Reset()
	writeHealth(&b, nil, "math")
	if b.Len() != 0 {
		t.Fatalf("no runs, yet a table:\n%s", b.String())
	}
}
