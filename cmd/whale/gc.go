package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
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
			ws, err := openExistingWorkspace(dbPath)
			if err != nil {
				return err
			}
			defer ws.Close()
			keepN := -1 // without --keep no checkpoint is dropped
			if cmd.Flags().Changed("keep") {
				keepN = keep
			}
			res, err := ws.GC(keepN)
			if err != nil {
				return err
			}
			dropped, n, freed := res.Dropped, res.Blobs, res.Bytes
			out := map[string]any{"checkpoints_dropped": dropped, "blobs_deleted": n, "bytes_freed": freed}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped %d checkpoints%s; deleted %d blobs, %.1f MB\n", len(dropped), list(dropped), n, float64(freed)/1e6)
			return nil
		},
	}
	dbFlag(c.Flags(), &dbPath)
	c.Flags().IntVar(&keep, "keep", 0, "kept checkpoints to keep per run (besides its best-val one)")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

func list(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " (" + strings.Join(ids, ", ") + ")"
}
