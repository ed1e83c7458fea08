package report

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ledgerRun is a finished run with per-task test scores: solved tasks are
// the first `solved` of n.
func ledgerRun(cond, acc string, seed uint64, solved, n int) Run {
	return ledgerRunFrom(cond, acc, seed, 0, solved, n)
}

// ledgerRunFrom solves tasks from, from+1, … (solved of them).
func ledgerRunFrom(cond, acc string, seed uint64, from, solved, n int) Run {
	per := make([]float64, n)
	for i := range solved {
		per[from+i] = 1
	}
	best := float64(solved) / float64(n)
	return Run{Condition: cond, Domain: "math", Seed: seed, Done: true, RunID: cond + "-" + acc + "-" + string(rune('0'+seed)),
		BestTestMean8: best, TestCI95: [2]float64{best, best}, Accounting: acc, TrainCalls: 100, SearchCalls: 50, Rollouts: 150,
		TestCallsPerEpisode: 1.5, TestPerTask: per, Curve: []Point{{Phase: PhaseStart}}}
}

func TestTheBootstrapOverTasksAndSeedsCarriesTheTestSetsError(t *testing.T) {
	// On every seed A solves 2 of 256 tasks more than B (10 B fails, less
	// 8 B solves): the same gain on every seed, which a t interval over
	// seeds would call certain (zero width). Two tasks of 256 is well
	// inside the test set's own error.
	var runs []Run
	for s := uint64(1); s <= 3; s++ {
		runs = append(runs, ledgerRunFrom(WhaleFixed, AccountingPaper, s, 0, 70, 256), ledgerRunFrom(WeightOnly, AccountingPaper, s, 10, 68, 256))
	}
	d := Compare(runs, "math", WhaleFixed, WeightOnly)
	if !d.TasksAndSeeds || d.CI95[0] > 0 || d.CI95[1] <= d.Mean {
		t.Fatalf("diff %+v: want a bootstrap interval over tasks and seeds around the +2-task gain that includes 0", d)
	}
	if v := d.Verdict(); v != "within noise of" {
		t.Fatalf("verdict %q, want within noise of", v)
	}
	// Forty tasks more on every seed clears it.
	runs = runs[:0]
	for s := uint64(1); s <= 3; s++ {
		runs = append(runs, ledgerRun(WhaleFixed, AccountingPaper, s, 100, 256), ledgerRun(WeightOnly, AccountingPaper, s, 60, 256))
	}
	if d := Compare(runs, "math", WhaleFixed, WeightOnly); d.Verdict() != "beats" || d.CI95[0] <= 0 {
		t.Fatalf("a +40-task gain: %+v %s, want beats", d, d.Verdict())
	}
}

func TestBothAccountingsAreReportedApart(t *testing.T) {
	var runs []Run
	for s := uint64(1); s <= 2; s++ {
		for _, acc := range Accountings {
			runs = append(runs, ledgerRun(WeightOnly, acc, s, 50+int(s), 256), ledgerRun(HarnessOnly, acc, s, 40, 256))
		}
		w := ledgerRun(WhaleFixed, AccountingPaper, s, 70, 256)
		runs = append(runs, w)
		w.Accounting = AccountingEqualTotal // the same run stands in both
		runs = append(runs, w)
		runs = append(runs, ledgerRun(VoteOnly, AccountingPaper, s, 45, 256))
	}
	for i := range runs {
		runs[i].Compute = time.Minute
	}
	// Per accounting, whale-fixed's two seeds are two runs, not four rows.
	tables := TablesByAccounting(runs)
	if len(tables) != 2 || tables[0].Accounting != AccountingPaper || tables[1].Accounting != AccountingEqualTotal {
		t.Fatalf("tables by accounting: %+v", tables)
	}
	for _, tb := range tables {
		for _, c := range tb.Cells {
			if c.Condition == WhaleFixed && c.N != 2 {
				t.Errorf("%s: whale-fixed over %d runs, want its 2 seeds", tb.Accounting, c.N)
			}
		}
	}
	dir := t.TempDir()
	if err := Write(dir, runs, Meta{Command: "whale bench conditions", TrainCalls: 100, SearchCalls: 50, Seeds: 2}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ResultsMD))
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, want := range []string{"# Accounting: paper", "# Accounting: equal-total", "## math (paper)", "## math (equal-total)",
		"100 + 50 = 150", "| 1.50 |", "100 training calls", "bootstrap over seeds and test tasks",
		// 14 rows, 12 runs: whale-fixed's stand in both accountings.
		"- Compute: 12.0 min summed over 12 runs"} {
		if !strings.Contains(text, want) {
			t.Errorf("RESULTS.md lacks %q", want)
		}
	}
	f, err := os.Open(filepath.Join(dir, ResultsCSV))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"accounting", "train_calls", "search_calls", "test_calls_per_episode"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("results.csv lacks column %s: %v", h, rows[0])
		}
	}
	seen := map[string]int{}
	for _, r := range rows[1:] {
		seen[r[col["accounting"]]]++
		if r[col["train_calls"]] != "100" || r[col["search_calls"]] != "50" || r[col["rollouts"]] != "150" {
			t.Errorf("row %v: want training 100 + search 50 = 150", r)
		}
	}
	if seen[AccountingPaper] != 8 || seen[AccountingEqualTotal] != 6 || len(seen) != 2 {
		t.Errorf("accounting values %v, want 8 paper and 6 equal-total rows", seen)
	}
	// Two runs of one condition, domain and seed under one accounting are
	// refused.
	dup := append(runs, ledgerRun(WeightOnly, AccountingPaper, 1, 3, 256))
	if err := Validate(dup); err == nil || !strings.Contains(err.Error(), "paper accounting") {
		t.Errorf("duplicate under one accounting: %v", err)
	}
	bad := []Run{ledgerRun(WeightOnly, "total", 1, 3, 256)}
	if err := Validate(bad); err == nil || !strings.Contains(err.Error(), "accounting") {
		t.Errorf("unknown accounting: %v", err)
	}
}
