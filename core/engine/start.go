package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	"whale/core/basemodel"
	"whale/core/bundle"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/store"
	"whale/kernels"
)

// Where a run's starting weights came from (StartModel.Kind).
const (
	StartEmbedded   = "embedded"
	StartFile       = "file"
	StartCheckpoint = "checkpoint"
	StartDir        = bundle.KindDir // a Hugging Face model folder
)

// StartModel records where a run's starting weights came from, so that a
// run stopped before its first resume point (killed, or a full disk) can
// begin again without being told: the built-in base model, a model file
// (its path and sha256), a Hugging Face folder (its path and
// bundle.DirHash), or a kept checkpoint (its id and weights blob). The
// tokenizer is not here: the run stores it (Config.Tokenizer).
type StartModel struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`   // basemodel.Name, the file's or folder's path, or the checkpoint id
	SHA256 string `json:"sha256"` // of the file (embedded: basemodel.SHA256), the folder (bundle.DirHash), or the checkpoint's weights blob
}

// StartingModel builds a run's starting model from its record, on be. For
// a file, moved (when not "") is where the file is now; its sha256 must be
// the recorded one either way.
func StartingModel(db *store.DB, s StartModel, be kernels.Backend, moved string) (*model.Model, error) {
	switch s.Kind {
	case StartEmbedded:
		if moved != "" {
			return nil, fmt.Errorf("engine: the run started from the built-in base model, not a file: drop --model")
		}
		if s.SHA256 != basemodel.SHA256 {
			return nil, fmt.Errorf("engine: the run started from a built-in base model with sha256 %s; this whale embeds %s", ShortHash(s.SHA256), ShortHash(basemodel.SHA256))
		}
		return basemodel.Load(be)
	case StartFile:
		path := s.Name
		if moved != "" {
			path = moved
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("engine: the run's starting model: %w (if it moved, name it with --model)", err)
		}
		sum := sha256.Sum256(b)
		if h := hex.EncodeToString(sum[:]); h != s.SHA256 {
			return nil, fmt.Errorf("engine: %s has sha256 %s, but the run started from %s with sha256 %s", path, ShortHash(h), s.Name, ShortHash(s.SHA256))
		}
		m, _, err := ckpt.DecodeModel(b, path, be)
		return m, err
	case StartDir:
		path := s.Name
		if moved != "" {
			path = moved
		}
		b, err := bundle.LoadDir(path, be)
		if err != nil {
			return nil, fmt.Errorf("engine: the run's starting model: %w (if it moved, name it with --model)", err)
		}
		if b.SHA256 != s.SHA256 {
			return nil, fmt.Errorf("engine: model folder %s has hash %s, but the run started from %s with hash %s", path, ShortHash(b.SHA256), s.Name, ShortHash(s.SHA256))
		}
		return b.Model, nil
	case StartCheckpoint:
		if moved != "" {
			return nil, fmt.Errorf("engine: the run started from checkpoint %s, not a file: drop --model", s.Name)
		}
		man, err := ReadCheckpoint(db, s.Name)
		if err != nil {
			return nil, fmt.Errorf("engine: the run's starting checkpoint: %w", err)
		}
		m, err := model.New(man.Config, be, 0)
		if err != nil {
			return nil, err
		}
		if man.Weights != s.SHA256 {
			return nil, fmt.Errorf("engine: the run's starting checkpoint %s holds weights %s, not the %s it started from", s.Name, ShortHash(man.Weights), ShortHash(s.SHA256))
		}
		if err := checkpointWeights(db, m, man); err != nil {
			return nil, fmt.Errorf("engine: the run's starting checkpoint %s: %w", s.Name, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("engine: unknown kind of starting model %q", s.Kind)
}
