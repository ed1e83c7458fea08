package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"whale/core/store"
)

func init() { register(newBackupCmd) }

func newBackupCmd() *cobra.Command {
	var dbPath, out string
	var asJSON bool
	var wait time.Duration
	c := &cobra.Command{
		Use:   "backup --db F --out G",
		Short: "Copy a workspace consistently, even while a run writes to it",
		Long: "Writes a consistent copy of the workspace F to G (a new file) and the blob files the copy uses to\n" +
			"G.blobs/. The copy is one read transaction, so a run writing to F goes on: when a run holds F,\n" +
			"whale backup asks that process to make the copy and waits for it (--wait). Restore by using G\n" +
			"as --db (or moving G and G.blobs over F and F.blobs).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("--out is required: the file to write the copy to")}
			}
			var info store.BackupInfo
			db, err := store.OpenReadOnly(dbPath, 200*time.Millisecond)
			switch {
			case errors.Is(err, store.ErrInUse):
				fmt.Fprintf(cmd.ErrOrStderr(), "%s is open in another process: asking it to make the copy\n", dbPath)
				if info, err = store.RequestBackup(dbPath, out, wait); err != nil {
					return err
				}
			case err != nil:
				return err
			default:
				info, err = db.Backup(out)
				db.Close()
				if err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up %s to %s: %.1f MB and %d blob files\n", info.DB, info.Out, float64(info.Bytes)/1e6, info.BlobFiles)
			return nil
		},
	}
	dbFlag(c.Flags(), &dbPath)
	c.Flags().StringVar(&out, "out", "", "the copy to write (a new file)")
	c.Flags().DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for a process holding the workspace to make the copy")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}
