package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/store"
	"whale/core/tokenizer"
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

// ExportCheckpoint writes a kept checkpoint into dir so that it can leave
// whale: model.safetensors (HF names, the config in its metadata),
// harness.star (the harness source) and manifest.json (round, step,
// metrics, hashes). It returns the files written.
func ExportCheckpoint(db *store.DB, id, dir string, dtype ckpt.DType) ([]string, error) {
	return ExportCheckpointAs(db, id, dir, dtype, ExportSafetensors)
}

// Export formats of the model file.
const (
	ExportSafetensors = "safetensors"
	// ExportGGUF writes model.gguf for llama.cpp (ckpt.EncodeGGUF) with
	// the byte tokenizer's vocabulary: checkpoints do not record a
	// tokenizer yet, and every model whale trains today uses that one.
	ExportGGUF = "gguf"
)

// ExportCheckpointAs is ExportCheckpoint with the model file in format
// (ExportSafetensors or ExportGGUF).
func ExportCheckpointAs(db *store.DB, id, dir string, dtype ckpt.DType, format string) ([]string, error) {
	if format != ExportSafetensors && format != ExportGGUF {
		return nil, fmt.Errorf("engine: export format %q (want %s or %s)", format, ExportSafetensors, ExportGGUF)
	}
	man, err := ReadCheckpoint(db, id)
	if err != nil {
		return nil, err
	}
	blob, err := db.GetBlob(man.Weights)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: weights: %w", id, err)
	}
	m, err := model.New(man.Config, kernels.NewCPU(), 0)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: %w", id, err)
	}
	if err := m.SetParamValues(bytesf32(blob)); err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: %w", id, err)
	}
	h, err := db.GetHarness(man.Harness)
	if err != nil {
		return nil, fmt.Errorf("engine: checkpoint %s: harness: %w", id, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("engine: export %s: %w", id, err)
	}
	files := []string{filepath.Join(dir, "model."+format), filepath.Join(dir, "harness.star"), filepath.Join(dir, "manifest.json")}
	if format == ExportGGUF {
		name := fmt.Sprintf("whale %s round %d %s", man.Run, man.Round, man.Phase)
		if err := ckpt.SaveGGUF(files[0], m, tokenizer.Bytes{}, dtype, name); err != nil {
			return nil, err
		}
	} else {
		meta := map[string]string{"whale.run": man.Run, "whale.round": strconv.Itoa(man.Round), "whale.phase": string(man.Phase),
			"whale.harness": man.Harness, "whale.weights": man.Weights}
		if err := ckpt.SaveModel(files[0], m, dtype, meta); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(files[1], []byte(h.Source), 0o644); err != nil {
		return nil, fmt.Errorf("engine: export %s: %w", id, err)
	}
	mj, _ := json.MarshalIndent(man, "", "  ")
	if err := os.WriteFile(files[2], append(mj, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("engine: export %s: %w", id, err)
	}
	return files, nil
}
