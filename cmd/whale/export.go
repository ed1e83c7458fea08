package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/ckpt"
	"whale/core/engine"
)

func init() { register(newExportCmd) }

func newExportCmd() *cobra.Command {
	var dbPath, out, dtype, format string
	var asJSON bool
	var shardGB float64
	c := &cobra.Command{
		Use:   "export CHECKPOINT --out DIR",
		Short: "Write a kept checkpoint as model.safetensors (HF names), a Hugging Face folder or model.gguf (llama.cpp), with harness.star and manifest.json",
		Long: "Writes a kept checkpoint into --out. --format whale (the default) writes model.safetensors with the model's\n" +
			"config in its metadata (and the run's tokenizer.json beside it, unless the model reads bytes);\n" +
			"--format hf writes a Hugging Face folder (config.json, model.safetensors, tokenizer.json,\n" +
			"generation_config.json; weights above --max-shard-gb in shards with an index, as transformers\n" +
			"writes them) that transformers and 'whale run --model DIR' load; --format gguf writes\n" +
			"model.gguf (GGUF v3 for llama.cpp, with the tokenizer's vocabulary and merges); a LoRA run's\n" +
			"checkpoint also exports as --format peft: its adapters alone (adapter_model.safetensors,\n" +
			"adapter_config.json) for the base model it started from. All add harness.star\n" +
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
			if !slices.Contains(engine.ExportFormats, format) {
				return usageError{fmt.Errorf("--format %q: want one of %s", format, strings.Join(engine.ExportFormats, ", "))}
			}
			db, err := openExistingStore(dbPath)
			if err != nil {
				return err
			}
			defer db.Close()
			if !(shardGB > 0) {
				return usageError{fmt.Errorf("--max-shard-gb %v: want a positive size", shardGB)}
			}
			files, err := engine.ExportCheckpoint(db, args[0], out, dt, format, int64(shardGB*1e9))
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
	dbFlag(c.Flags(), &dbPath)
	c.Flags().StringVar(&out, "out", "", "directory to write into")
	c.Flags().StringVar(&dtype, "dtype", "f32", "storage of the weights: f32, bf16 or f16 (GGUF keeps 1-D tensors in f32)")
	c.Flags().StringVar(&format, "format", engine.ExportWhale, "whale (model.safetensors), hf (a Hugging Face folder), gguf (model.gguf for llama.cpp) or, for a LoRA checkpoint, peft (its adapters)")
	c.Flags().Float64Var(&shardGB, "max-shard-gb", 5, "--format hf: weights above this many GB go into shards model-0000k-of-0000N.safetensors with model.safetensors.index.json")
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}
