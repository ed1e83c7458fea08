package engine

import (
	"fmt"
	"slices"

	"whale/core/model"
	"whale/core/store"
)

// withLoRA readies m for weights stored as LoRA adapters (lora set): the
// frozen weights become blob base (unless base is "", when m's stay) and
// adapters of lora are enabled, seeded by seed, unless m has them already
// (then they must be of the same configuration); with lora.BF16Base the
// frozen weights are then held in bfloat16 (rounded: the blob keeps the
// weights as they came). Without lora it does nothing.
func withLoRA(db *store.DB, m *model.Model, lora *model.LoRAConfig, base string, seed uint64) error {
	if lora == nil {
		return nil
	}
	if have := m.LoRA(); have != nil {
		if have.Rank != lora.Rank || have.Alpha != lora.Alpha || !slices.Equal(have.Targets, lora.Targets) {
			return fmt.Errorf("engine: the model's LoRA adapters (%+v) differ from the run's (%+v)", *have, *lora)
		}
		return freezeBase(m, lora)
	}
	if base != "" {
		b, err := db.GetBlob(base)
		if err != nil {
			return fmt.Errorf("engine: LoRA's frozen weights: %w", err)
		}
		if err := m.SetParamValues(bytesf32(b)); err != nil {
			return fmt.Errorf("engine: LoRA's frozen weights %s: %w", ShortHash(base), err)
		}
	}
	if err := m.EnableLoRA(*lora, seed); err != nil { // with lora.BF16Base, FreezeBF16 too
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// freezeBase holds the frozen weights of m, which has adapters already,
// in bfloat16 when lora asks for it and they are not already.
func freezeBase(m *model.Model, lora *model.LoRAConfig) error {
	if !lora.BF16Base || m.BaseBF16() {
		return nil
	}
	if err := m.FreezeBF16(); err != nil {
		return fmt.Errorf("engine: LoRA's bfloat16 base: %w", err)
	}
	return nil
}

// checkpointWeights loads kept checkpoint man's weights into m (a model of
// man.Config): the frozen weights and the adapters under LoRA.
func checkpointWeights(db *store.DB, m *model.Model, man CheckpointManifest) error {
	blob, err := db.GetBlob(man.Weights)
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	if man.LoRA == nil {
		return m.SetParamValues(bytesf32(blob))
	}
	if err := withLoRA(db, m, man.LoRA, man.Base, 0); err != nil {
		return err
	}
	return m.SetTrainableValues(bytesf32(blob))
}
