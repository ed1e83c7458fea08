package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/spf13/cobra"

	"whale/core/compare"
	tuicompare "whale/tui/compare"
)

func init() { register(newCompareCmd) }

func newCompareCmd() *cobra.Command {
	var dbPath string
	var asJSON, asTUI bool
	c := &cobra.Command{
		Use:   "compare RUN RUN...",
		Short: "Put runs side by side: config differences, best val and test with intervals, paired difference, calls per ledger",
		Long: "Reads each run (finished or live) from the workspace and prints the configuration keys whose values\n" +
			"differ, each run's best val mean@k and test mean@k with their 95 % intervals, the paired difference\n" +
			"of test scores on the tasks two runs share (same domain and data seed), and the model calls of each\n" +
			"ledger. --tui opens the compare view: the runs' val and test curves over model calls overlaid.",
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asTUI {
				return usageError{errors.New("--json and --tui: choose one")}
			}
			c, err := compareRuns(dbPath, args)
			if err != nil {
				return err
			}
			switch {
			case asJSON:
				return printJSON(cmd.OutOrStdout(), c)
			case asTUI:
				if !isTerminal(cmd.OutOrStdout()) {
					return usageError{errors.New("--tui needs a terminal: without one, whale compare prints the comparison (or --json)")}
				}
				if _, err := tea.NewProgram(tuicompare.New(compareView(c)), tea.WithAltScreen(), tea.WithContext(cmd.Context())).Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
					return fmt.Errorf("compare: %w", err)
				}
				return nil
			}
			printComparison(cmd.OutOrStdout(), c)
			return nil
		},
	}
	dbFlag(c.Flags(), &dbPath)
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	c.Flags().BoolVar(&asTUI, "tui", false, "open the compare view (curves over model calls, config differences)")
	return c
}

// compareRuns reads the runs without writing to the workspace (or from
// the process that holds it) and compares them.
func compareRuns(dbPath string, ids []string) (compare.Comparison, error) {
	seen := map[string]bool{}
	var ins []compare.Input
	for _, id := range ids {
		if seen[id] {
			return compare.Comparison{}, usageError{fmt.Errorf("run %s named twice", id)}
		}
		seen[id] = true
		r, evs, err := storedRunEvents(dbPath, id)
		if err != nil {
			return compare.Comparison{}, err
		}
		ins = append(ins, compare.Input{ID: r.ID, Status: r.Status, Config: r.Config, Cursor: r.Cursor, Events: evs})
	}
	return compare.Build(ins)
}

func measureText(m *compare.Measure) string {
	if m == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] @%d", m.Mean, m.CI95[0], m.CI95[1], m.K)
}

func compareLedgerText(r compare.Run) string {
	l := r.Ledger
	return fmt.Sprintf("%d/%d/%d", l.TrainCalls, l.SearchCalls, l.EvalCalls)
}

func pairedText(p compare.Paired) string {
	if p.Tasks == 0 {
		return fmt.Sprintf("%s − %s: %s", p.A, p.B, p.Why)
	}
	return fmt.Sprintf("%s − %s: %+.3f [%+.3f, %+.3f] over %d tasks", p.A, p.B, p.Mean, p.CI95[0], p.CI95[1], p.Tasks)
}

// printComparison is whale compare's human output.
func printComparison(w io.Writer, c compare.Comparison) {
	idW := len("run")
	for _, r := range c.Runs {
		idW = max(idW, len(r.ID))
	}
	fmt.Fprintf(w, "%-*s  %-9s %-9s %-30s %-30s %s\n", idW, "run", "status", "domain", "best val mean@k [95% CI]", "test mean@k [95% CI]", "model calls train/search/eval")
	for _, r := range c.Runs {
		fmt.Fprintf(w, "%-*s  %-9s %-9s %-30s %-30s %s\n", idW, r.ID, r.Status, r.Domain, measureText(r.BestVal), measureText(r.Test), compareLedgerText(r))
	}
	fmt.Fprintln(w)
	if len(c.Diffs) == 0 {
		fmt.Fprintln(w, "config: the same")
	} else {
		fmt.Fprintf(w, "config differences (%d):\n", len(c.Diffs))
		keyW := 0
		for _, d := range c.Diffs {
			keyW = max(keyW, len(d.Key))
		}
		for _, d := range c.Diffs {
			fmt.Fprintf(w, "  %-*s  %s\n", keyW, d.Key, strings.Join(d.Values, " | "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "paired test difference (per-task means on shared tasks, 95% bootstrap CI):")
	for _, p := range c.Paired {
		fmt.Fprintf(w, "  %s\n", pairedText(p))
	}
}

// compareView is the comparison as the compare view's data.
func compareView(c compare.Comparison) tuicompare.Data {
	var d tuicompare.Data
	var ledgers []string
	for _, r := range c.Runs {
		run := tuicompare.Run{ID: r.ID, Scores: "best val " + measureText(r.BestVal) + " · test " + measureText(r.Test)}
		for _, p := range r.ValCurve {
			run.Val = append(run.Val, tuicompare.XY{X: float64(p.Calls), Y: p.Value})
		}
		for _, p := range r.TestCurve {
			run.Test = append(run.Test, tuicompare.XY{X: float64(p.Calls), Y: p.Value})
		}
		d.Runs = append(d.Runs, run)
		ledgers = append(ledgers, compareLedgerText(r))
	}
	for _, df := range c.Diffs {
		d.Diff = append(d.Diff, tuicompare.Row{Key: df.Key, Values: df.Values})
	}
	for _, p := range c.Paired {
		d.Notes = append(d.Notes, "paired test difference "+pairedText(p))
	}
	d.Notes = append(d.Notes, "model calls (train/search/eval): "+strings.Join(ledgers, " · "))
	return d
}
