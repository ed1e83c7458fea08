package ckpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"whale/core/model"
)

// DefaultShardBytes is the largest weights file SaveWeights writes before
// it splits them: transformers' save_pretrained default (5 GB).
const DefaultShardBytes = 5_000_000_000

// SaveWeights writes m's weights into folder dir as Hugging Face lays them
// out: model.safetensors when they fit in maxShard bytes, else shards of
// at most maxShard bytes each (a tensor larger than that alone in one),
// model-00001-of-0000N.safetensors in parameter order, with
// model.safetensors.index.json mapping every tensor to its shard. Each
// file carries the config and meta (as SaveModel). The other layout's
// entry file, left by an earlier export into dir, is removed, so that
// loaders find this one. It returns the files written.
func SaveWeights(dir string, m *model.Model, dtype DType, meta map[string]string, maxShard int64) ([]string, error) {
	if maxShard <= 0 {
		return nil, fmt.Errorf("ckpt: shard size %d must be positive", maxShard)
	}
	ts, err := Tensors(m, dtype)
	if err != nil {
		return nil, err
	}
	var shards [][]Tensor
	var size, total int64
	for _, t := range ts {
		n := int64(numel(t.Shape) * dtype.size())
		if len(shards) == 0 || size+n > maxShard && size > 0 {
			shards, size = append(shards, nil), 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		size += n
		total += n
	}
	all, err := modelMeta(m, meta)
	if err != nil {
		return nil, err
	}
	if len(shards) == 1 {
		path := filepath.Join(dir, HFWeights)
		if err := WriteFile(path, ts, all); err != nil {
			return nil, err
		}
		return []string{path}, removeStale(filepath.Join(dir, HFIndex))
	}
	weightMap := map[string]string{}
	var files []string
	for i, sh := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		path := filepath.Join(dir, name)
		if err := WriteFile(path, sh, all); err != nil {
			return nil, err
		}
		for _, t := range sh {
			weightMap[t.Name] = name
		}
		files = append(files, path)
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]int64{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("ckpt: shard index: %w", err)
	}
	path := filepath.Join(dir, HFIndex)
	if err := writeAtomic(path, append(idx, '\n')); err != nil {
		return nil, err
	}
	return append(files, path), removeStale(filepath.Join(dir, HFWeights))
}

func removeStale(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("ckpt: remove an earlier export's %s: %w", path, err)
	}
	return nil
}
