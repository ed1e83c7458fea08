package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"whale/core/engine"
	"whale/core/store"
)

func init() { register(newCheckCmd) }

// checkFailed is a check that found damage: exit status 1, after the
// report.
type checkFailed struct{ msg string }

func (e checkFailed) Error() string { return e.msg }

func newCheckCmd() *cobra.Command {
	var dbPath string
	var asJSON bool
	c := &cobra.Command{
		Use:   "check --db F",
		Short: "Check a workspace for damage: its pages, every blob's hash, every run's references",
		Long: "Reads the whole workspace without writing to it: bbolt's consistency check of every page, every\n" +
			"blob against its sha256 (blob files beside the database too), every checkpoint's blobs, and every\n" +
			"run's record, events and resume point (the blobs and checkpoints it names). It lists what is\n" +
			"damaged and which runs that affects, and exits 1 when anything is. A workspace a run is writing\n" +
			"to cannot be checked; check a copy made with 'whale backup'.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			db, err := store.OpenForCheck(dbPath, time.Second)
			if errors.Is(err, store.ErrInUse) {
				return fmt.Errorf("%w; or check a copy: whale backup --db %s --out COPY, then whale check --db COPY", err, dbPath)
			}
			if err != nil {
				return err
			}
			defer db.Close()
			rep := db.Check()
			engine.CheckReferences(rep)
			affected := rep.Affected()
			if asJSON {
				if err := printJSON(cmd.OutOrStdout(), map[string]any{"db": rep.Path, "ok": len(rep.Problems) == 0, "runs": rep.Runs, "events": rep.Events,
					"blobs": rep.Blobs, "checkpoints": rep.Checkpoints, "problems": nonNil(rep.Problems), "affected_runs": nonNil(affected)}); err != nil {
					return err
				}
			} else {
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "%s: %d runs, %d events, %d blobs, %d checkpoints\n", rep.Path, rep.Runs, rep.Events, rep.Blobs, rep.Checkpoints)
				for _, p := range rep.Problems {
					fmt.Fprintf(w, "  %s: %s\n", p.Where, p.What)
				}
				if len(rep.Problems) == 0 {
					fmt.Fprintln(w, "no damage found")
				}
			}
			if len(rep.Problems) == 0 {
				return nil
			}
			runs := "runs " + strings.Join(affected, ", ")
			if len(affected) == 0 {
				runs = "no run"
			} else if affected[0] == "*" {
				runs = "possibly every run"
			}
			return checkFailed{fmt.Sprintf("%s is damaged: %d problems, affecting %s; restore a backup made with 'whale backup', or resume the runs it spares", rep.Path, len(rep.Problems), runs)}
		},
	}
	dbFlag(c.Flags(), &dbPath)
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
