package ckpt

import (
	"fmt"
	"slices"

	"whale/core/model"
)

// checkTensors checks, before a model of cfg is allocated, that src holds
// every parameter such a model has, each with its shape: the sizes in a
// config are believed only once the weights' own headers agree, so a
// config.json that says vocab_size 1e9 beside weights of 151,936 rows
// fails here, naming both, rather than allocating for it. where names the
// weights, cfgName the config.
func checkTensors(cfg model.Config, src map[string]*File, where, cfgName string) error {
	for _, p := range cfg.Layout() {
		f := src[p.Name]
		if f == nil {
			return fmt.Errorf("ckpt: %s: tensor %s, which %s implies, is not in the weights: %w", where, p.Name, cfgName, ErrNotFound)
		}
		if e := f.entries[p.Name]; !slices.Equal(e.Shape, p.Shape) {
			return fmt.Errorf("ckpt: %s: tensor %s has shape %v, but %s implies %v: the config and the weights are not one model's", f.Name, p.Name, e.Shape, cfgName, p.Shape)
		}
	}
	return nil
}
