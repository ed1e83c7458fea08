// Package basemodel is whale's built-in base model: a small Qwen3-shaped
// transformer over the byte-level tokenizer, trained from a seed by
// `whale pretrain` (core/pretrain) and embedded in the binary, so whale
// runs with no network and no model download. Its sha256 is recorded here
// and checked on every load.
//
// The package must never train or modify the model; a new base model is
// made with `whale pretrain` and committed together with its hash (see
// docs/BASE_MODEL.md).
package basemodel

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/tokenizer"
	"whale/kernels"
)

//go:embed base.safetensors
var raw []byte

// Name is how errors and reports name the embedded model.
const Name = "embedded:base.safetensors"

// SHA256 is the recorded hash of base.safetensors. Load refuses a file that
// does not match, so a model replaced without updating this line is caught.
const SHA256 = "9e4d07edb62bdc4785786ecafef527d7417d50a05e777a8769c4d11435ef8676"

// Bytes returns the embedded model file (safetensors, bf16).
func Bytes() []byte { return raw }

// Hash returns the sha256 of the embedded file as hex.
func Hash() string {
	s := sha256.Sum256(raw)
	return hex.EncodeToString(s[:])
}

// Tokenizer is the tokenizer the base model was trained with.
func Tokenizer() tokenizer.Tokenizer { return tokenizer.NewBytes() }

// Load decodes the embedded model onto be after checking its hash.
func Load(be kernels.Backend) (*model.Model, error) {
	if h := Hash(); h != SHA256 {
		return nil, fmt.Errorf("basemodel: embedded base.safetensors has sha256 %s, the recorded hash is %s", h, SHA256)
	}
	m, _, err := ckpt.DecodeModel(raw, Name, be)
	if err != nil {
		return nil, fmt.Errorf("basemodel: %w", err)
	}
	return m, nil
}

// Info is the embedded model's provenance, from its metadata.
type Info struct {
	SHA256     string       `json:"sha256"`
	Config     model.Config `json:"config"`
	Params     int          `json:"params"`
	Seed       uint64       `json:"seed"`
	DataSeed   uint64       `json:"data_seed"`
	Steps      int          `json:"steps"`
	Target     int          `json:"target_steps"`
	CorpusHash string       `json:"corpus_hash"`
	Loss       float64      `json:"loss"`
	Tokenizer  string       `json:"tokenizer"`
}

// Describe reads the provenance of a model file's bytes (the embedded one
// or another written by `whale pretrain`); name is used in errors.
func Describe(b []byte, name string) (Info, error) {
	f, err := ckpt.Decode(b, name)
	if err != nil {
		return Info{}, fmt.Errorf("basemodel: %w", err)
	}
	s := sha256.Sum256(b)
	in := Info{SHA256: hex.EncodeToString(s[:]), Tokenizer: f.Meta[ckpt.MetaTokenizer], CorpusHash: f.Meta[ckpt.MetaCorpusHash]}
	if err := json.Unmarshal([]byte(f.Meta[ckpt.MetaConfig]), &in.Config); err != nil {
		return Info{}, fmt.Errorf("basemodel: %s: metadata %q: %w", name, ckpt.MetaConfig, err)
	}
	in.Params = in.Config.NumParams()
	for _, x := range []struct {
		key string
		dst any
	}{{ckpt.MetaSeed, &in.Seed}, {ckpt.MetaDataSeed, &in.DataSeed}, {ckpt.MetaSteps, &in.Steps}, {ckpt.MetaTarget, &in.Target}, {ckpt.MetaLoss, &in.Loss}} {
		v, ok := f.Meta[x.key]
		if !ok {
			return Info{}, fmt.Errorf("basemodel: %s: metadata %q missing: not a model written by whale pretrain", name, x.key)
		}
		var perr error
		switch d := x.dst.(type) {
		case *uint64:
			*d, perr = strconv.ParseUint(v, 10, 64)
		case *int:
			*d, perr = strconv.Atoi(v)
		case *float64:
			*d, perr = strconv.ParseFloat(v, 64)
		}
		if perr != nil {
			return Info{}, fmt.Errorf("basemodel: %s: metadata %q = %q: %w", name, x.key, v, perr)
		}
	}
	return in, nil
}

// EmbeddedInfo returns the embedded model's provenance.
func EmbeddedInfo() (Info, error) { return Describe(raw, Name) }
