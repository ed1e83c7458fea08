package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
)

// CSVHeader is results.csv's header. The first five columns are the ones
// the issue fixes; the rest follow them and may grow, never move. Since
// budgets are counted in model calls, "rollouts" and "eval_rollouts" hold
// model calls (the budget spent); "episodes" and "eval_episodes" the
// rollouts themselves; "rollouts" is "train_calls" + "search_calls".
// "accounting" is paper or equal-total (report.Accountings).
var CSVHeader = []string{
	"condition", "domain", "seed", "best_test_mean_at_8", "rollouts",
	"run_id", "done", "ci_lo", "ci_hi", "eval_rollouts", "phases", "compute_s", "episodes", "eval_episodes",
	"best_test_pass_at_8", "mean_entropy", "accounting", "train_calls", "search_calls", "test_calls_per_episode", "vote_k",
}

// encodeCSV writes one row per run in the order given (Write sorts first).
// An unfinished run keeps its row, with done=false and its score columns
// empty: it has no best checkpoint a reader could average by mistake.
func encodeCSV(runs []Run) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(CSVHeader); err != nil {
		return nil, fmt.Errorf("report: encode %s header: %w", ResultsCSV, err)
	}
	for _, r := range runs {
		best, lo, hi, secs, pass, ent := "", "", "", "", "", ""
		if r.Compute > 0 {
			secs = strconv.FormatFloat(r.Compute.Seconds(), 'f', 1, 64)
		}
		if r.Done {
			best, lo, hi, pass = frac(r.BestTestMean8), frac(r.TestCI95[0]), frac(r.TestCI95[1]), frac(r.BestTestPass8)
		}
		if r.HasEntropy {
			ent = frac(r.Entropy)
		}
		vk := ""
		if r.VoteK > 0 {
			vk = strconv.Itoa(r.VoteK)
		}
		row := []string{
			r.Condition, r.Domain, strconv.FormatUint(r.Seed, 10), best, strconv.Itoa(r.Rollouts),
			r.RunID, strconv.FormatBool(r.Done), lo, hi, strconv.Itoa(r.EvalRollouts), strconv.Itoa(r.Phases), secs,
			strconv.Itoa(r.Episodes), strconv.Itoa(r.EvalEpisodes), pass, ent,
			accountingOf(r), strconv.Itoa(r.TrainCalls), strconv.Itoa(r.SearchCalls), strconv.FormatFloat(r.TestCallsPerEpisode, 'f', 3, 64), vk,
		}
		if err := w.Write(row); err != nil {
			return nil, fmt.Errorf("report: encode %s row of run %s: %w", ResultsCSV, r.RunID, err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("report: encode %s: %w", ResultsCSV, err)
	}
	return buf.Bytes(), nil
}

func frac(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
