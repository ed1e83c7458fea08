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
		Use:   "export CHECKPOINT --out DIR [--format safetensors|gguf]",
		Short: "Write a kept checkpoint as model.safetensors (HF names) or model.gguf (llama.cpp), harness.star and manifest.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{fmt.Errorf("--out DIR is required")}
			}
			dt, err := ckpt.ParseDType(dtype)
			if err != nil {
				return usageError{err}
			}
			if format != engine.ExportSafetensors && format != engine.ExportGGUF {
				return usageError{fmt.Errorf("unknown --format %q (want %s or %s)", format, engine.ExportSafetensors, engine.ExportGGUF)}
			}
			db, err := openStore(dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			files, err := engine.ExportCheckpointAs(db, args[0], out, dt, format)
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
	c.Flags().StringVar(&dtype, "dtype", "f32", "storage of the weights: f32, bf16 or f16 (GGUF keeps 1-D tensors in f32)")
	c.Flags().StringVar(&format, "format", engine.ExportSafetensors, "model file format: safetensors (Hugging Face names) or gguf (GGUF v3 for llama.cpp, with the tokenizer's vocabulary)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}
