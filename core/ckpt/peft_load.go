package ckpt

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"whale/core/model"
	"whale/internal/readcap"
)

// LoadAdapters reads a PEFT LoRA adapter folder, as SaveAdapters writes
// one, into m's adapters: m must have adapters of the folder's rank,
// alpha and target modules (adapter_config.json), and the weights file
// must hold each of them under its PEFT name and shape. It is what a
// serving replica does with the adapter a trainer exported.
func LoadAdapters(dir string, m *model.Model) error {
	lc := m.LoRA()
	if lc == nil {
		return fmt.Errorf("ckpt: load adapters from %s: the model has no LoRA adapters to load into", dir)
	}
	cp := filepath.Join(dir, PEFTConfig)
	b, err := readcap.File(cp, readcap.JSON, "adapter config")
	if err != nil {
		return fmt.Errorf("ckpt: %w", err)
	}
	var cfg struct {
		PEFTType string   `json:"peft_type"`
		R        int      `json:"r"`
		Alpha    float64  `json:"lora_alpha"`
		Modules  []string `json:"target_modules"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("ckpt: %s: %w", cp, err)
	}
	want := make([]string, len(lc.Targets))
	for i, t := range lc.Targets {
		want[i] = model.LoRAModule(t)
	}
	have := slices.Clone(cfg.Modules)
	slices.Sort(want)
	slices.Sort(have)
	switch {
	case cfg.PEFTType != "LORA":
		return fmt.Errorf("ckpt: %s: peft_type %q (want LORA)", cp, cfg.PEFTType)
	case cfg.R != lc.Rank:
		return fmt.Errorf("ckpt: %s: r %d, the model's adapters have rank %d", cp, cfg.R, lc.Rank)
	case cfg.Alpha != float64(lc.Alpha):
		return fmt.Errorf("ckpt: %s: lora_alpha %v, the model's adapters have %v", cp, cfg.Alpha, lc.Alpha)
	case !slices.Equal(have, want):
		return fmt.Errorf("ckpt: %s: target_modules %v, the model's adapters target %v", cp, cfg.Modules, want)
	}
	f, err := ReadFile(filepath.Join(dir, PEFTWeights))
	if err != nil {
		return err
	}
	var vals []float32
	for _, p := range m.TrainableParams() {
		v, err := f.Float32(p.Name, p.Shape)
		if err != nil {
			return err
		}
		vals = append(vals, v...)
	}
	if err := m.SetTrainableValues(vals); err != nil {
		return fmt.Errorf("ckpt: %s: %w", dir, err)
	}
	return nil
}
