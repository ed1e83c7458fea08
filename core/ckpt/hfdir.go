package ckpt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"whale/core/model"
	"whale/kernels"

	"whale/internal/readcap"
)

// The files of a Hugging Face model folder that hold the model itself.
const (
	HFConfig  = "config.json"
	HFWeights = "model.safetensors"
	HFIndex   = "model.safetensors.index.json"
)

// DirFile is a file read from a model folder and the sha256 of its bytes.
type DirFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

func dirFile(name string, b []byte) DirFile {
	s := sha256.Sum256(b)
	return DirFile{Name: name, SHA256: hex.EncodeToString(s[:])}
}

// LoadDir reads the model of a Hugging Face folder onto be: config.json
// (ParseHFConfig) and the weights, model.safetensors or, when there is
// none, model.safetensors.index.json and the shards it names. Every
// parameter must be present exactly once with its exact shape; F32, BF16
// and F16 tensors are converted to the model's float32 arena. It returns
// the files it read with their hashes (config.json first, then the
// weights in the order read), and the metadata of model.safetensors (nil
// for a sharded folder).
func LoadDir(dir string, be kernels.Backend) (*model.Model, map[string]string, []DirFile, error) {
	cfgPath := filepath.Join(dir, HFConfig)
	cb, err := readcap.File(cfgPath, readcap.JSON, HFConfig)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ckpt: model folder %s: %w", dir, err)
	}
	cfg, err := ParseHFConfig(cb, cfgPath)
	if err != nil {
		return nil, nil, nil, err
	}
	src, files, err := dirTensors(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := checkTensors(cfg, src, dir, cfgPath); err != nil {
		return nil, nil, nil, err
	}
	m, err := model.New(cfg, be, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("ckpt: %s: %w", cfgPath, err)
	}
	if err := fillFrom(m, src, dir); err != nil {
		return nil, nil, nil, err
	}
	var meta map[string]string
	if f := src["model.embed_tokens.weight"]; f != nil && len(files) == 1 {
		meta = f.Meta
	}
	return m, meta, append([]DirFile{dirFile(HFConfig, cb)}, files...), nil
}

// dirTensors opens a folder's weight files and maps each tensor to the
// file that holds it.
func dirTensors(dir string) (map[string]*File, []DirFile, error) {
	single := filepath.Join(dir, HFWeights)
	b, err := readcap.File(single, readcap.Weights, HFWeights)
	if err == nil {
		f, err := Decode(b, single)
		if err != nil {
			return nil, nil, err
		}
		src := map[string]*File{}
		for _, n := range f.Names() {
			src[n] = f
		}
		return src, []DirFile{dirFile(HFWeights, b)}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("ckpt: %w", err)
	}
	idxPath := filepath.Join(dir, HFIndex)
	ib, err := readcap.File(idxPath, readcap.Index, HFIndex)
	if errors.Is(err, fs.ErrNotExist) {
		why := ""
		if _, err := os.Stat(filepath.Join(dir, "pytorch_model.bin")); err == nil {
			why = " (it has pytorch_model.bin: convert it to safetensors first)"
		}
		return nil, nil, fmt.Errorf("ckpt: model folder %s holds neither %s nor %s%s", dir, HFWeights, HFIndex, why)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("ckpt: %w", err)
	}
	return shardTensors(dir, idxPath, ib)
}

// shardTensors reads the shards an index names and checks that every
// tensor is in exactly one shard, the one the index maps it to.
func shardTensors(dir, idxPath string, ib []byte) (map[string]*File, []DirFile, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(ib, &idx); err != nil {
		return nil, nil, fmt.Errorf("ckpt: %s: %w", idxPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, nil, fmt.Errorf("ckpt: %s: weight_map is empty or missing", idxPath)
	}
	var shards []string
	seen := map[string]bool{}
	for t, s := range idx.WeightMap {
		if s == "" || filepath.Base(s) != s || s == "." || s == ".." {
			return nil, nil, fmt.Errorf("ckpt: %s: tensor %s maps to %q, which is not a file name in the folder", idxPath, t, s)
		}
		if !seen[s] {
			seen[s] = true
			shards = append(shards, s)
		}
	}
	sort.Strings(shards)
	src := map[string]*File{}
	files := []DirFile{dirFile(HFIndex, ib)}
	for _, s := range shards {
		path := filepath.Join(dir, s)
		b, err := readcap.File(path, readcap.Weights, "shard")
		if err != nil {
			return nil, nil, fmt.Errorf("ckpt: %s names shard %s: %w", idxPath, s, err)
		}
		f, err := Decode(b, path)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, dirFile(s, b))
		for _, n := range f.Names() {
			switch want, ok := idx.WeightMap[n]; {
			case src[n] != nil:
				return nil, nil, fmt.Errorf("ckpt: tensor %s is in both %s and %s", n, src[n].Name, path)
			case !ok:
				return nil, nil, fmt.Errorf("ckpt: %s: tensor %s is not in %s's weight_map", path, n, HFIndex)
			case want != s:
				return nil, nil, fmt.Errorf("ckpt: %s: tensor %s is here, but %s maps it to %s", path, n, HFIndex, want)
			}
			src[n] = f
		}
	}
	for t, s := range idx.WeightMap {
		if src[t] == nil {
			return nil, nil, fmt.Errorf("ckpt: %s maps tensor %s to %s, which does not hold it", idxPath, t, s)
		}
	}
	return src, files, nil
}

// HFConfigJSON is the config.json of a model with weights stored as
// dtype, as transformers reads it. A qwen2 model must have q/k/v biases:
// transformers' Qwen2 always builds them.
func HFConfigJSON(c model.Config, dtype DType) ([]byte, error) {
	arch := ""
	for a, mt := range hfArchitectures {
		if mt == c.ModelType {
			arch = a
		}
	}
	if arch == "" {
		return nil, fmt.Errorf("ckpt: model_type %q has no Hugging Face architecture", c.ModelType)
	}
	if c.ModelType == "qwen2" && !c.AttentionBias {
		return nil, errors.New("ckpt: a qwen2 model without attention_bias cannot be written as Qwen2ForCausalLM, which always has q/k/v biases")
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("ckpt: encode config: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("ckpt: encode config: %w", err)
	}
	torchDType := map[DType]string{F32: "float32", BF16: "bfloat16", F16: "float16"}[dtype]
	if torchDType == "" {
		return nil, fmt.Errorf("ckpt: unknown dtype %q", dtype)
	}
	out["architectures"] = []string{arch}
	out["torch_dtype"] = torchDType
	out["head_dim"] = c.Dim() // explicit: transformers' Qwen3 defaults an absent head_dim to 128
	out["hidden_act"] = "silu"
	out["attention_bias"] = c.AttentionBias
	out["attention_dropout"] = 0.0
	out["use_sliding_window"] = false
	out["rope_scaling"] = nil
	return json.MarshalIndent(out, "", "  ")
}
