package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/ckpt"
	"whale/core/engine"
)

func init() { register(newExportCmd) }

func newExportCmd() *cobra.Command {
	var dbPath, out, dtype string
	var asJSON bool
	c := &cobra.Command{
		Use:   "export CHECKPOINT --out DIR",
		Short: "Write a kept checkpoint as model.safetensors (HF names), harness.star and manifest.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{fmt.Errorf("--out DIR is required")}
			}
			dt, err := ckpt.ParseDType(dtype)
			if err != nil {
				return usageError{err}
			}
			db, err := openStore(dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			files, err := engine.ExportCheckpoint(db, args[0], out, dt)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"checkpoint": args[0], "files": files})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exported %s: %s\n", args[0], strings.Join(files, ", "))
			return nil
		},
	}
	c.Flags().StringVar(&dbPath, "db", "whale.db", "workspace file")
	c.Flags().StringVar(&out, "out", "", "directory to write into")
	c.Flags().StringVar(&dtype, "dtype", "f32", "storage of the weights: f32, bf16 or f16")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}
