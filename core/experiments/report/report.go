// Package report turns finished bench runs (one per condition × domain ×
// seed) into the experiments report: RESULTS.md, results.csv and one PNG
// chart per domain.
//
// It is pure: plain data in, files out. It must never import the engine, the
// store or anything under core/, so the CLI can feed it from whatever it
// loaded and tests can feed it synthetic runs. It must never average an
// unfinished run, and never call a difference a win unless the confidence
// interval over seeds says so: the report is only useful if it is honest.
package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Point is a run's state at one phase boundary (a kept checkpoint).
type Point struct {
	Rollouts   int     `json:"rollouts"`    // budget (model calls of train + search) spent at this boundary
	PhaseStart int     `json:"phase_start"` // budgeted rollouts when the phase that just ended began
	Phase      string  `json:"phase"`       // "weights" or "harness": the phase that just ended ("start" for the point before any phase)
	Round      int     `json:"round"`
	Val        float64 `json:"val"`  // val mean@k at the boundary (k = ValK of the run)
	Test       float64 `json:"test"` // test mean@k at the boundary (k: Meta.CurveK), if HasTest
	HasTest    bool    `json:"has_test"`
	// ValPass is val pass@k at the boundary (ValPass − Val: how much the k
	// samples of a task still disagree); HasPass is false for runs stored
	// before whale measured it.
	ValPass float64 `json:"val_pass"`
	HasPass bool    `json:"has_pass"`
}

// Phase names a Point may carry.
const (
	PhaseStart   = "start"
	PhaseWeights = "weights"
	PhaseHarness = "harness"
)

// Run is one condition × domain × seed run. Its JSON form is a line of the
// bench's record (experiments.Record), so its names are a file format.
type Run struct {
	Condition     string     `json:"condition"` // one of Conditions
	Domain        string     `json:"domain"`
	Seed          uint64     `json:"seed"`
	RunID         string     `json:"run_id"`
	Done          bool       `json:"done"`            // finished; unfinished runs are listed as missing, never averaged
	BestTestMean8 float64    `json:"best_test_mean8"` // test mean@8 of the run's best-val checkpoint (what the engine reports)
	TestCI95      [2]float64 `json:"test_ci95"`       // bootstrap CI over test tasks of that figure
	Rollouts      int        `json:"rollouts"`        // the budget the whole run spent: model calls of training and scoring
	EvalRollouts  int        `json:"eval_rollouts"`   // model calls of evaluation
	// Episodes counts the rollouts (episodes) of training and scoring,
	// EvalEpisodes those of evaluation: a voting harness spends several
	// model calls per episode.
	Episodes     int `json:"episodes"`
	EvalEpisodes int `json:"eval_episodes"`
	// BestTestPass8 is test pass@8 of the best-val checkpoint (Done runs).
	BestTestPass8 float64 `json:"best_test_pass8"`
	// Entropy is the mean token entropy (nats) of the run's weight steps'
	// completions; HasEntropy is false without weight steps (harness-only)
	// and for runs stored before whale measured it.
	Entropy    float64 `json:"entropy"`
	HasEntropy bool    `json:"has_entropy"`
	Curve      []Point `json:"curve"`  // in order; Curve[0] is the start (Phase "start", Rollouts 0)
	Phases     int     `json:"phases"` // phases run
	// Compute is the time the run's stored work took, over every process
	// that ran it; 0 when the store holds no record (runs created before
	// whale kept one).
	Compute time.Duration `json:"compute_ns"`
	// Steered counts the control commands a person applied to the run
	// that change what it computes (force, prune, unprune, freeze,
	// unfreeze; pause and resume do not): a steered run is no longer the
	// condition's plain measurement, and the report says so.
	Steered int `json:"steered,omitempty"`
	// Accounting is how the run's budget compares with the others' (one
	// of Accountings): "paper" (the paper's two ledgers: every condition
	// that trains gets the same weight ledger, every condition that
	// searches the same search ledger) or "equal-total" (every condition
	// the same total of training and search calls); "" for runs recorded
	// before the ledgers were split, which ran at an equal total.
	Accounting string `json:"accounting,omitempty"`
	// TrainCalls and SearchCalls split Rollouts into the weight ledger's
	// and the search ledger's calls; TestCallsPerEpisode is the model
	// calls per test episode of the best checkpoint's test measurement
	// (test-time compute) and StartCallsPerEpisode that of the starting
	// weights and harness (0: not measured).
	TrainCalls           int     `json:"train_calls,omitempty"`
	SearchCalls          int     `json:"search_calls,omitempty"`
	TestCallsPerEpisode  float64 `json:"test_calls_per_episode,omitempty"`
	StartCallsPerEpisode float64 `json:"start_calls_per_episode,omitempty"`
	// TestPerTask is the best checkpoint's mean reward per test task, in
	// the test split's order (empty for older runs): paired comparisons
	// bootstrap over tasks and seeds together from it.
	TestPerTask []float64 `json:"test_per_task,omitempty"`
	// VoteK is the vote-only control's SAMPLES and VoteFrom how it was
	// chosen ("harness-only": the seed-matched harness-only run's
	// test-time calls per episode over h0's; "fixed": the plan's k).
	VoteK    int    `json:"vote_k,omitempty"`
	VoteFrom string `json:"vote_from,omitempty"`
}

// Accountings are the values of Run.Accounting a bench writes, in report
// order.
var Accountings = []string{AccountingPaper, AccountingEqualTotal}

// Accounting names.
const (
	AccountingPaper      = "paper"
	AccountingEqualTotal = "equal-total"
)

// accountingOf is r's accounting, an unlabelled (older) run's being
// equal-total.
func accountingOf(r Run) string {
	if r.Accounting == "" {
		return AccountingEqualTotal
	}
	return r.Accounting
}

// Conditions in report order.
var Conditions = []string{"weight-only", "harness-only", "vote-only", "staged", "fast-slow", "whale-fixed", "whale-adaptive"}

// Condition names the code itself refers to.
const (
	WeightOnly    = "weight-only"
	HarnessOnly   = "harness-only"
	VoteOnly      = "vote-only"
	WhaleFixed    = "whale-fixed"
	WhaleAdaptive = "whale-adaptive"
)

// Meta describes how the report was made.
type Meta struct {
	Command string // the exact command that made the report (RESULTS.md names it)
	Preset  string
	Budget  int // rollout budget per run (one ledger; 0 with two)
	// TrainCalls and SearchCalls are the paper accounting's ledgers per
	// run (0: a one-ledger bench at Budget).
	TrainCalls, SearchCalls int
	Seeds                   int
	// FromRecord says the runs were read from a record of finished runs
	// alone (bench conditions --report-only): a run it lacks may be under
	// way, so the report calls it absent from the record, not unstarted.
	FromRecord bool
	// CurveK is the k of the runs' test measurements at phase boundaries
	// (the curves and the per-round gains; 0: 8, the best checkpoint's).
	CurveK int
	Notes  []string // free paragraphs the integrator adds (e.g. what the base model is)
	// History is Markdown appended after the domains: the findings of
	// earlier benches, kept as they were (the bench reads HistoryMD).
	History string
}

// HistoryMD is the file in the output folder whose Markdown the bench
// appends to RESULTS.md (Meta.History).
const HistoryMD = "HISTORY.md"

// curveLabel names the boundary test measurement, "test mean@k".
func (m Meta) curveLabel() string {
	if m.CurveK > 0 {
		return fmt.Sprintf("test mean@%d", m.CurveK)
	}
	return "test mean@8"
}

// File names Write produces inside its directory (charts are <domain>.png).
const (
	ResultsMD  = "RESULTS.md"
	ResultsCSV = "results.csv"
)

// domainName keeps a domain usable as a chart file name and a Markdown
// heading without escaping.
var domainName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func conditionIndex(c string) int { return slices.Index(Conditions, c) }

// Validate checks runs the way Write does before writing anything: known
// conditions, usable domain names, no two runs for one condition × domain ×
// seed, fractions in [0, 1] and curves in rollout order.
func Validate(runs []Run) error {
	seen := make(map[string]string, len(runs))
	for i, r := range runs {
		name := r.RunID
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		if conditionIndex(r.Condition) < 0 {
			return fmt.Errorf("report: run %s: unknown condition %q (want one of %s)", name, r.Condition, strings.Join(Conditions, ", "))
		}
		if !domainName.MatchString(r.Domain) {
			return fmt.Errorf("report: run %s: domain %q is not a plain name (letters, digits, '_', '.', '-')", name, r.Domain)
		}
		if r.Accounting != "" && !slices.Contains(Accountings, r.Accounting) {
			return fmt.Errorf("report: run %s: unknown accounting %q (want %s)", name, r.Accounting, strings.Join(Accountings, " or "))
		}
		key := fmt.Sprintf("%s/%s/%d/%s", r.Condition, r.Domain, r.Seed, accountingOf(r))
		if other, ok := seen[key]; ok {
			return fmt.Errorf("report: runs %s and %s are both %s on %s with seed %d under the %s accounting", other, name, r.Condition, r.Domain, r.Seed, accountingOf(r))
		}
		if r.TrainCalls < 0 || r.SearchCalls < 0 || r.TestCallsPerEpisode < 0 || r.StartCallsPerEpisode < 0 || r.VoteK < 0 {
			return fmt.Errorf("report: run %s: negative training calls (%d), search calls (%d), test-time calls (%g, start %g) or vote k (%d)", name, r.TrainCalls, r.SearchCalls, r.TestCallsPerEpisode, r.StartCallsPerEpisode, r.VoteK)
		}
		for j, v := range r.TestPerTask {
			if err := checkFraction(v); err != nil {
				return fmt.Errorf("report: run %s: test_per_task[%d]: %w", name, j, err)
			}
		}
		seen[key] = name
		if r.Rollouts < 0 || r.EvalRollouts < 0 || r.Phases < 0 {
			return fmt.Errorf("report: run %s: negative rollouts (%d), eval rollouts (%d) or phases (%d)", name, r.Rollouts, r.EvalRollouts, r.Phases)
		}
		if r.Done {
			if err := checkFraction(r.BestTestMean8); err != nil {
				return fmt.Errorf("report: run %s: best test mean@8: %w", name, err)
			}
			for j, v := range r.TestCI95 {
				if err := checkFraction(v); err != nil {
					return fmt.Errorf("report: run %s: test CI95[%d]: %w", name, j, err)
				}
			}
			if r.TestCI95[0] > r.TestCI95[1] {
				return fmt.Errorf("report: run %s: test CI95 [%g, %g] has its bounds reversed", name, r.TestCI95[0], r.TestCI95[1])
			}
		}
		for j, p := range r.Curve {
			switch p.Phase {
			case PhaseStart, PhaseWeights, PhaseHarness:
			default:
				return fmt.Errorf("report: run %s: curve[%d]: unknown phase %q (want %s, %s or %s)", name, j, p.Phase, PhaseStart, PhaseWeights, PhaseHarness)
			}
			if err := checkFraction(p.Val); err != nil {
				return fmt.Errorf("report: run %s: curve[%d].val: %w", name, j, err)
			}
			if p.HasTest {
				if err := checkFraction(p.Test); err != nil {
					return fmt.Errorf("report: run %s: curve[%d].test: %w", name, j, err)
				}
			}
			if p.Rollouts < 0 || p.PhaseStart < 0 || p.PhaseStart > p.Rollouts {
				return fmt.Errorf("report: run %s: curve[%d]: phase span [%d, %d] is not a forward span of rollouts", name, j, p.PhaseStart, p.Rollouts)
			}
			if j > 0 && p.Rollouts < r.Curve[j-1].Rollouts {
				return fmt.Errorf("report: run %s: curve[%d]: rollouts %d go back from %d", name, j, p.Rollouts, r.Curve[j-1].Rollouts)
			}
		}
	}
	return nil
}

func checkFraction(v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return fmt.Errorf("%g is not a fraction in [0, 1]", v)
	}
	return nil
}

// sortedRuns returns a copy of runs in report order: domain, condition order,
// seed, run id. Every output walks runs in this order so it is deterministic
// whatever order the caller loaded them in.
func sortedRuns(runs []Run) []Run {
	out := slices.Clone(runs)
	slices.SortStableFunc(out, func(a, b Run) int {
		if c := slices.Index(Accountings, accountingOf(a)) - slices.Index(Accountings, accountingOf(b)); c != 0 {
			return c
		}
		if c := strings.Compare(a.Domain, b.Domain); c != 0 {
			return c
		}
		if c := conditionIndex(a.Condition) - conditionIndex(b.Condition); c != 0 {
			return c
		}
		if a.Seed != b.Seed {
			if a.Seed < b.Seed {
				return -1
			}
			return 1
		}
		return strings.Compare(a.RunID, b.RunID)
	})
	return out
}

// domains lists the domains of runs, sorted.
func domains(runs []Run) []string {
	var ds []string
	for _, r := range runs {
		if !slices.Contains(ds, r.Domain) {
			ds = append(ds, r.Domain)
		}
	}
	slices.Sort(ds)
	return ds
}

// Write writes dir/RESULTS.md, dir/results.csv and one chart per domain
// dir/<domain>.png (creating dir). Output is deterministic for the same input
// (no timestamps, sorted order). Nothing is written if the runs do not
// validate.
func Write(dir string, runs []Run, meta Meta) error {
	if err := Validate(runs); err != nil {
		return err
	}
	if len(runs) == 0 {
		return fmt.Errorf("report: no runs to report")
	}
	runs = sortedRuns(runs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: create %s: %w", dir, err)
	}
	csvBytes, err := encodeCSV(runs)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, ResultsCSV), csvBytes); err != nil {
		return err
	}
	// The charts show the first accounting the runs have (the paper's
	// where there is one): one chart per domain.
	charted := ofAccounting(runs, accountings(runs)[0])
	for _, d := range domains(charted) {
		png, err := Chart(charted, d, meta)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, ChartFile(d)), png); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, ResultsMD), Markdown(runs, meta))
}

// ChartFile is the file name of a domain's chart inside the report directory.
func ChartFile(domain string) string { return domain + ".png" }

// writeFile replaces path whole, so an interrupted Write never leaves a
// half-written report behind for a reader to trust.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: write %s: %w", path, werr)
	}
	return nil
}

// accountings lists the accountings runs have, in Accountings order.
func accountings(runs []Run) []string {
	var out []string
	for _, a := range Accountings {
		for _, r := range runs {
			if accountingOf(r) == a {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// ofAccounting is the runs of accounting a.
func ofAccounting(runs []Run, a string) []Run {
	var out []Run
	for _, r := range runs {
		if accountingOf(r) == a {
			out = append(out, r)
		}
	}
	return out
}
