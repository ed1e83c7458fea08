package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"whale/core/bundle"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/store"
	"whale/core/tokenizer"
	"whale/harnesses"
	"whale/kernels"
)

// ReadCheckpoint returns a kept checkpoint's manifest.
func ReadCheckpoint(db *store.DB, id string) (CheckpointManifest, error) {
	var man CheckpointManifest
	c, err := db.GetCheckpoint(id)
	if err != nil {
		return man, err
	}
	if err := json.Unmarshal(c.Manifest, &man); err != nil {
		return man, fmt.Errorf("engine: checkpoint %s: manifest: %w", id, err)
	}
	return man, nil
}

// Export formats of a kept checkpoint.
const (
	ExportWhale = "whale" // model.safetensors with the config in its metadata (and tokenizer.json beside it, unless the byte tokenizer)
	ExportHF    = "hf"    // a Hugging Face model folder (bundle.WriteDir)
	// ExportGGUF writes model.gguf for llama.cpp (ckpt.EncodeGGUF) with the
	// vocabulary, merges and special ids of the run's tokenizer.
	ExportGGUF = "gguf"
	// ExportPEFT writes a LoRA checkpoint's adapters alone as a PEFT
	// adapter folder (ckpt.SaveAdapters), for the base model it started
	// from.
	ExportPEFT = "peft"
)

// ExportFormats lists the formats ExportCheckpoint writes.
var ExportFormats = []string{ExportWhale, ExportHF, ExportGGUF, ExportPEFT}

// CheckpointBundle is a kept checkpoint's model with its tokenizer (the
// run's, stored as a blob) and generation settings (the run's), on the
// CPU, and its manifest.
func CheckpointBundle(db *store.DB, id string) (*bundle.Bundle, CheckpointManifest, error) {
	man, err := ReadCheckpoint(db, id)
	if err != nil {
		return nil, man, err
	}
	b, err := checkpointBundle(db, id, man)
	return b, man, err
}

// checkpointBundle is CheckpointBundle of the manifest man already read.
func checkpointBundle(db *store.DB, id string, man CheckpointManifest) (*bundle.Bundle, error) {
	m, err := checkpointModel(db, id, man)
	if err != nil {
		return nil, err
	}
	if man.LoRA != nil {
		// What leaves whale, or is evaluated, is one model: the adapters
		// folded into the frozen weights.
		if m, err = m.MergeLoRA(); err != nil {
			return nil, fmt.Errorf("engine: checkpoint %s: %w", id, err)
		}
	}
	var cfg Config
	if r, err := db.GetRun(man.Run); err == nil {
		if cfg, err = DecodeConfig(man.Run, r.Config); err != nil {
			return nil, fmt.Errorf("engine: checkpoint %s: %w", id, err)
		}
	}
	var tokJSON []byte
	var tok tokenizer.Tokenizer = tokenizer.Bytes{}
	if man.Tokenizer != "" {
		if tokJSON, err = db.GetBlob(man.Tokenizer); err != nil {
			return nil, fmt.Errorf("engine: checkpoint %s: tokenizer.json: %w", id, err)
		}
		if tok, err = tokenizer.Parse(tokJSON); err != nil {
			return nil, fmt.Errorf("engine: run %s: its tokenizer.json (blob %s): %w", man.Run, ShortHash(man.Tokenizer), err)
		}
	}
	var gen bundle.Generation
	if cfg.Generation != nil {
		gen = *cfg.Generation
	}
	b, err := bundle.New(m, tok, tokJSON, gen, "checkpoint "+id)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// checkpointModel is kept checkpoint man's model on the CPU, with its
// adapters when it holds LoRA ones.
func checkpointModel(db *store.DB, id string, man CheckpointManifest) (*model.Model, error) {
	m, err := model.New(man.Config, kernels.NewCPU(), 0)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: %w", id, err)
	}
	if err := checkpointWeights(db, m, man); err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: %w", id, err)
	}
	return m, nil
}

// exportAdapters writes LoRA checkpoint man's adapters as a PEFT folder,
// naming the base model the run started from.
func exportAdapters(db *store.DB, id, dir string, man CheckpointManifest, dtype ckpt.DType, meta map[string]string) ([]string, error) {
	m, err := checkpointModel(db, id, man)
	if err != nil {
		return nil, err
	}
	base := ""
	if r, err := db.GetRun(man.Run); err == nil {
		if cfg, err := DecodeConfig(man.Run, r.Config); err == nil && cfg.Start != nil {
			base = cfg.Start.Name
		}
	}
	return ckpt.SaveAdapters(dir, m, dtype, base, meta)
}

// ExportCheckpoint writes a kept checkpoint into dir so that it can leave
// whale, in format ExportWhale (model.safetensors with HF names and the
// config in its metadata, and tokenizer.json beside it unless the model
// reads bytes), ExportHF (a Hugging Face folder: config.json,
// model.safetensors, tokenizer.json, generation_config.json) or ExportGGUF
// (model.gguf) or, for a LoRA checkpoint, ExportPEFT (the adapters alone:
// adapter_model.safetensors, adapter_config.json), with harness.star (the
// harness source) and manifest.json (round, step, metrics, hashes) in
// every case. ExportHF splits weights
// larger than maxShard bytes (0: ckpt.DefaultShardBytes) into shards with
// an index. It returns the files written.
func ExportCheckpoint(db *store.DB, id, dir string, dtype ckpt.DType, format string, maxShard int64) ([]string, error) {
	if !slices.Contains(ExportFormats, format) {
		return nil, fmt.Errorf("engine: export format %q (want one of %v)", format, ExportFormats)
	}
	man, err := ReadCheckpoint(db, id)
	if err != nil {
		return nil, err
	}
	if format == ExportPEFT && man.LoRA == nil {
		return nil, fmt.Errorf("engine: export %s as %s: the checkpoint holds every weight, not LoRA adapters (export it as %s, %s or %s)", id, ExportPEFT, ExportWhale, ExportHF, ExportGGUF)
	}
	var b *bundle.Bundle
	if format != ExportPEFT {
		if b, err = checkpointBundle(db, id, man); err != nil {
			return nil, err
		}
	}
	h, err := db.GetHarness(man.Harness)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: harness: %w", id, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: export %s: %w", id, err)
	}
	meta := map[string]string{"whale.run": man.Run, "whale.round": strconv.Itoa(man.Round), "whale.phase": string(man.Phase),
		"whale.harness": man.Harness, "whale.weights": man.Weights}
	var files []string
	switch format {
	case ExportPEFT:
		if files, err = exportAdapters(db, id, dir, man, dtype, meta); err != nil {
			return nil, err
		}
	case ExportHF:
		if maxShard == 0 {
			maxShard = ckpt.DefaultShardBytes
		}
		if files, err = bundle.WriteDirShards(dir, b, dtype, meta, maxShard); err != nil {
			return nil, err
		}
	case ExportGGUF:
		voc, ok := b.Tokenizer.(ckpt.Vocabulary)
		if !ok {
			return nil, fmt.Errorf("engine: export %s: its tokenizer (%T) cannot list its vocabulary for GGUF", id, b.Tokenizer)
		}
		files = []string{filepath.Join(dir, "model.gguf")}
		name := fmt.Sprintf("whale %s round %d %s", man.Run, man.Round, man.Phase)
		if err := ckpt.SaveGGUF(files[0], b.Model, voc, dtype, name); err != nil {
			return nil, err
		}
	default:
		meta[ckpt.MetaTokenizer] = b.TokenizerMeta()
		files = []string{filepath.Join(dir, ckpt.HFWeights)}
		if err := ckpt.SaveModel(files[0], b.Model, dtype, meta); err != nil {
			return nil, err
		}
		if b.TokenizerJSON != nil {
			files = append(files, filepath.Join(dir, bundle.TokenizerFile))
			if err := os.WriteFile(files[1], b.TokenizerJSON, 0o644); err != nil {
				return nil, fmt.Errorf("engine: export %s: %w", id, err)
			}
		}
	}
	hs, ms := filepath.Join(dir, "harness.star"), filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(hs, []byte(h.Source), 0o644); err != nil {
		return nil, fmt.Errorf("engine: export %s: %w", id, err)
	}
	mj, _ := json.MarshalIndent(man, "", "  ")
	if err := os.WriteFile(ms, append(mj, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("engine: export %s: %w", id, err)
	}
	return append(files, hs, ms), nil
}

// DiffHarnesses is the line diff of two harness sources that `whale
// harness diff` prints (harnesses.Diff), for readers of a run that import
// nothing of the harness runtime (the workbench).
func DiffHarnesses(nameA, a, nameB, b string) string { return harnesses.Diff(nameA, a, nameB, b) }
