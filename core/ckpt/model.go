package ckpt

import (
	"encoding/json"
	"fmt"
	"sort"

	"whale/core/model"
	"whale/kernels"

	"whale/internal/readcap"
)

// Tensors returns m's parameters as safetensors tensors in dtype, with HF
// names and shapes. A tied model has no lm_head.weight (HF writes none).
func Tensors(m *model.Model, dtype DType) ([]Tensor, error) {
	var out []Tensor
	for _, p := range m.Params() {
		v, err := m.ReadParam(p.Name)
		if err != nil {
			return nil, fmt.Errorf("ckpt: read %s: %w", p.Name, err)
		}
		out = append(out, Tensor{Name: p.Name, Shape: p.Shape, DType: dtype, Data: v})
	}
	return out, nil
}

// EncodeModel serialises m with its config (and meta, which must not use
// the reserved keys) as safetensors bytes.
func EncodeModel(m *model.Model, dtype DType, meta map[string]string) ([]byte, error) {
	all, err := modelMeta(m, meta)
	if err != nil {
		return nil, err
	}
	ts, err := Tensors(m, dtype)
	if err != nil {
		return nil, err
	}
	return Encode(ts, all)
}

// modelMeta is meta with the reserved keys: m's config and the format.
func modelMeta(m *model.Model, meta map[string]string) (map[string]string, error) {
	cfg, err := json.Marshal(m.Config)
	if err != nil {
		return nil, fmt.Errorf("ckpt: encode config: %w", err)
	}
	all := map[string]string{MetaConfig: string(cfg), MetaFormat: "pt"}
	for k, v := range meta {
		if _, reserved := all[k]; reserved {
			return nil, fmt.Errorf("ckpt: metadata key %q is reserved", k)
		}
		all[k] = v
	}
	return all, nil
}

// SaveModel writes m to path atomically.
func SaveModel(path string, m *model.Model, dtype DType, meta map[string]string) error {
	b, err := EncodeModel(m, dtype, meta)
	if err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	return writeAtomic(path, b)
}

// LoadModel reads a model written by SaveModel (or any safetensors file
// whose metadata carries an HF config) onto backend be. Every parameter
// must be present with its exact shape, and the file may hold no tensor
// the model lacks (lm_head.weight of a tied model is ignored, as HF does).
// It returns the file's metadata too.
func LoadModel(path string, be kernels.Backend) (*model.Model, map[string]string, error) {
	b, err := readcap.File(path, readcap.Weights, "model file")
	if err != nil {
		return nil, nil, fmt.Errorf("ckpt: %w", err)
	}
	return DecodeModel(b, path, be)
}

// DecodeModel is LoadModel over bytes already in memory (an embedded
// model); name is used in errors.
func DecodeModel(b []byte, name string, be kernels.Backend) (*model.Model, map[string]string, error) {
	f, err := Decode(b, name)
	if err != nil {
		return nil, nil, err
	}
	raw, ok := f.Meta[MetaConfig]
	if !ok {
		return nil, nil, fmt.Errorf("ckpt: %s: no %q in the metadata: not a whale model file (for a Hugging Face model, name its folder)", name, MetaConfig)
	}
	cfg, err := model.ParseConfig([]byte(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("ckpt: %s: metadata %q: %w", name, MetaConfig, err)
	}
	src := map[string]*File{}
	for _, n := range f.Names() {
		src[n] = f
	}
	if err := checkTensors(cfg, src, name, "its metadata's config"); err != nil {
		return nil, nil, err
	}
	m, err := model.New(cfg, be, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("ckpt: %s: %w", name, err)
	}
	if err := fill(m, f); err != nil {
		return nil, nil, err
	}
	return m, f.Meta, nil
}

// fill loads every parameter of m from f.
func fill(m *model.Model, f *File) error {
	src := map[string]*File{}
	for _, n := range f.Names() {
		src[n] = f
	}
	return fillFrom(m, src, f.Name)
}

// fillFrom loads every parameter of m from the file src maps its name to;
// where names the whole (a file or a folder) in errors. No tensor may be
// left over (lm_head.weight of a tied model is ignored, as HF does).
func fillFrom(m *model.Model, src map[string]*File, where string) error {
	want := map[string]bool{}
	for _, p := range m.Params() {
		want[p.Name] = true
		f := src[p.Name]
		if f == nil {
			return fmt.Errorf("ckpt: %s: tensor %s: %w", where, p.Name, ErrNotFound)
		}
		v, err := f.Float32(p.Name, p.Shape)
		if err != nil {
			return err
		}
		if err := m.WriteParam(p.Name, v); err != nil {
			return fmt.Errorf("ckpt: %s: %w", f.Name, err)
		}
	}
	var extra []string
	for n := range src {
		if !want[n] && !(n == "lm_head.weight" && m.Config.TieWordEmbeddings) {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("ckpt: %s: tensor %s is not a parameter of this model (%d unexpected tensors)", src[extra[0]].Name, extra[0], len(extra))
	}
	return nil
}
