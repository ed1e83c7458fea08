package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/engine"
	"whale/core/store"
)

func init() { register(newGCCmd) }

func newGCCmd() *cobra.Command {
	var dbPath string
	var keep int
	var asJSON bool
	c := &cobra.Command{
		Use:   "gc",
		Short: "Drop old kept checkpoints (--keep N per run) and delete blobs nothing references",
		Long: "Every phase boundary keeps a checkpoint. With --keep N, each run keeps its N most recent kept\n" +
			"checkpoints and its best-val one; the others are dropped. Then every blob that no checkpoint\n" +
			"and no run's resume point references is deleted. Without --keep only unreferenced blobs go.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if keep < 0 {
				return usageError{fmt.Errorf("--keep %d must be ≥ 0", keep)}
			}
			db, err := openExistingStore(dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			runs, err := db.Runs()
			if err != nil {
				return err
			}
			live := map[string]bool{}
			dropped := []string{}
			for _, r := range runs {
				cfg, st, err := readRun(r)
				if err != nil {
					return err
				}
				for _, h := range engine.ResumeBlobs(cfg, st) {
					live[h] = true
				}
				if !cmd.Flags().Changed("keep") {
					continue
				}
				ids, err := db.Checkpoints(r.ID + "/")
				if err != nil {
					return err
				}
				if ids, err = byRoundAndPhase(db, ids); err != nil {
					return err
				}
				for i, id := range ids {
					if i >= len(ids)-keep || id == st.BestCkpt {
						continue
					}
					if err := db.DeleteCheckpoint(id); err != nil {
						return err
					}
					dropped = append(dropped, id)
				}
			}
			n, freed, err := db.CollectGarbage(func(h string) bool { return live[h] })
			if err != nil {
				return err
			}
			out := map[string]any{"checkpoints_dropped": dropped, "blobs_deleted": n, "bytes_freed": freed}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped %d checkpoints%s; deleted %d blobs, %.1f MB\n", len(dropped), list(dropped), n, float64(freed)/1e6)
			return nil
		},
	}
	c.Flags().StringVar(&dbPath, "db", "whale.db", "workspace file")
	c.Flags().IntVar(&keep, "keep", 0, "kept checkpoints to keep per run (besides its best-val one)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

// byRoundAndPhase orders kept checkpoint ids as their runs made them: by
// round, then the weights phase before the harness phase of that round,
// read from their manifests. (Ids are RUN/NN-phase with at least two
// digits, so as text round 100 sorts before round 99.)
func byRoundAndPhase(db *store.DB, ids []string) ([]string, error) {
	type kept struct {
		id    string
		round int
		rank  int
	}
	ks := make([]kept, len(ids))
	for i, id := range ids {
		man, err := engine.ReadCheckpoint(db, id)
		if err != nil {
			return nil, err
		}
		rank := 2
		switch man.Phase {
		case engine.PhaseWeights:
			rank = 0
		case engine.PhaseHarness:
			rank = 1
		}
		ks[i] = kept{id, man.Round, rank}
	}
	slices.SortStableFunc(ks, func(a, b kept) int {
		return cmp.Or(cmp.Compare(a.round, b.round), cmp.Compare(a.rank, b.rank), strings.Compare(a.id, b.id))
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out, nil
}

func list(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " (" + strings.Join(ids, ", ") + ")"
}
