package ckpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"whale/core/model"
)

// A PEFT LoRA adapter folder, as peft's save_pretrained writes one and
// PeftModel.from_pretrained reads it.
const (
	PEFTWeights = "adapter_model.safetensors"
	PEFTConfig  = "adapter_config.json"
)

// SaveAdapters writes m's LoRA adapters into dir as PEFT lays them out:
// adapter_model.safetensors (each lora_A (r,in) and lora_B (out,r) under
// PEFT's names, in dtype, with meta) and adapter_config.json (rank, alpha,
// target modules; base, when not "", as base_model_name_or_path). The
// adapters' term is alpha/r·B·A there as here. It returns the files
// written.
func SaveAdapters(dir string, m *model.Model, dtype DType, base string, meta map[string]string) ([]string, error) {
	lc := m.LoRA()
	if lc == nil {
		return nil, errors.New("ckpt: the model has no LoRA adapters to save")
	}
	vals := m.TrainableValues()
	var ts []Tensor
	for _, p := range m.TrainableParams() {
		ts = append(ts, Tensor{Name: p.Name, Shape: p.Shape, DType: dtype, Data: vals[p.Offset : p.Offset+p.Len]})
	}
	all := map[string]string{MetaFormat: "pt"}
	for k, v := range meta {
		if _, reserved := all[k]; reserved {
			return nil, fmt.Errorf("ckpt: metadata key %q is reserved", k)
		}
		all[k] = v
	}
	modules := make([]string, len(lc.Targets))
	for i, t := range lc.Targets {
		modules[i] = model.LoRAModule(t)
	}
	cfg := map[string]any{
		"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": lc.Rank, "lora_alpha": lc.Alpha,
		"target_modules": modules, "lora_dropout": 0.0, "bias": "none", "fan_in_fan_out": false,
		"use_rslora": false, "use_dora": false, "inference_mode": true, "base_model_name_or_path": base,
	}
	cj, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("ckpt: adapter config: %w", err)
	}
	wp, cp := filepath.Join(dir, PEFTWeights), filepath.Join(dir, PEFTConfig)
	if err := WriteFile(wp, ts, all); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cp, append(cj, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("ckpt: %w", err)
	}
	return []string{wp, cp}, nil
}
