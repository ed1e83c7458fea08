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
	var dbPath, out, dtype, format string
	var asJSON bool
	c := &cobra.Command{
		Use:   "export CHECKPOINT --out DIR",
		Short: "Write a kept checkpoint as model.safetensors (HF names), harness.star and manifest.json, or as a Hugging Face folder",
		Long: "Writes a kept checkpoint into --out. --format whale (the default) writes model.safetensors with the model's\n" +
			"config in its metadata (and the run's tokenizer.json beside it, unless the model reads bytes);\n" +
			"--format hf writes a Hugging Face folder (config.json, model.safetensors, tokenizer.json,\n" +
			"generation_config.json) that transformers and 'whale run --model DIR' load. Both add harness.star\n" +
			"(the checkpoint's harness) and manifest.json.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{fmt.Errorf("--out DIR is required")}
			}
			dt, err := ckpt.ParseDType(dtype)
			if err != nil {
				return usageError{err}
			}
			if format != engine.ExportWhale && format != engine.ExportHF {
				return usageError{fmt.Errorf("--format %q: want %s or %s", format, engine.ExportWhale, engine.ExportHF)}
			}
			db, err := openStore(dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			files, err := engine.ExportCheckpoint(db, args[0], out, dt, format)
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
	c.Flags().StringVar(&format, "format", engine.ExportWhale, "whale (model.safetensors) or hf (a Hugging Face folder)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}
