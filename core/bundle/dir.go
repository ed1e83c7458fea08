package bundle

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"whale/core/ckpt"
	"whale/core/tokenizer"
	"whale/kernels"

	"whale/internal/readcap"
)

// The files of a Hugging Face model folder besides the model's own
// (ckpt.HFConfig, ckpt.HFWeights, ckpt.HFIndex).
const (
	TokenizerFile  = "tokenizer.json"
	GenerationFile = "generation_config.json"
)

// LoadDir opens a Hugging Face model folder: config.json and the weights
// (ckpt.LoadDir: model.safetensors or a sharded index; BF16 and F16
// tensors become the float32 arena), tokenizer.json (required: a model
// never runs with a tokenizer it was not trained with) and
// generation_config.json (optional). The folder's hash covers every file
// read (DirHash).
func LoadDir(dir string, be kernels.Backend) (*Bundle, error) {
	m, meta, files, err := ckpt.LoadDir(dir, be)
	if err != nil {
		return nil, err
	}
	tp := filepath.Join(dir, TokenizerFile)
	tb, err := readcap.File(tp, readcap.Tokenizer, "tokenizer")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("bundle: model folder %s has no %s: whale runs a model only with its own tokenizer", dir, TokenizerFile)
	}
	if err != nil {
		return nil, fmt.Errorf("bundle: %w", err)
	}
	files = append(files, ckpt.DirFile{Name: TokenizerFile, SHA256: sha256Hex(tb)})
	tok := tokenizer.NewBytes()
	if bytes.Equal(tb, tokenizer.BytesJSON()) {
		tb = nil // the byte tokenizer, as WriteDir wrote it: the same ids, and no file to carry
	} else if tok, err = tokenizer.Parse(tb); err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", tp, err)
	}
	if n, v := tok.VocabSize(), m.Config.VocabSize; n > v {
		return nil, fmt.Errorf("bundle: %s has token ids up to %d, but %s has vocab_size %d: they are not one model's", tp, n-1, filepath.Join(dir, ckpt.HFConfig), v)
	}
	var gen Generation
	gp := filepath.Join(dir, GenerationFile)
	gb, err := readcap.File(gp, readcap.JSON, "generation config")
	switch {
	case err == nil:
		if gen, err = ParseGeneration(gb, gp); err != nil {
			return nil, err
		}
		files = append(files, ckpt.DirFile{Name: GenerationFile, SHA256: sha256Hex(gb)})
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("bundle: %w", err)
	}
	b, err := New(m, tok, tb, gen, dir)
	if err != nil {
		return nil, err
	}
	b.Kind, b.Name, b.SHA256 = KindDir, dir, DirHash(files)
	if v, ok := meta[ckpt.MetaDataSeed]; ok {
		if b.DataSeed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, fmt.Errorf("bundle: %s: metadata %q = %q is not a seed", filepath.Join(dir, ckpt.HFWeights), ckpt.MetaDataSeed, v)
		}
	}
	return b, nil
}

// DirHash is a model folder's identity: the sha256 of one line
// "NAME SHA256\n" per file read, in the order LoadDir reads them, so that
// a changed, added or removed weight, tokenizer or generation file
// changes it.
func DirHash(files []ckpt.DirFile) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s %s\n", f.Name, f.SHA256)
	}
	return sha256Hex([]byte(b.String()))
}

// WriteDir writes b into dir as a Hugging Face model folder that
// transformers and LoadDir read: config.json, model.safetensors (weights
// as dtype; meta, which may not use ckpt's reserved keys, goes into its
// metadata with the tokenizer's name), tokenizer.json (BytesJSON for the
// byte tokenizer, which encodes exactly as it) and generation_config.json
// (every stop of the template as eos_token_id). It returns the files
// written.
func WriteDir(dir string, b *Bundle, dtype ckpt.DType, meta map[string]string) ([]string, error) {
	return WriteDirShards(dir, b, dtype, meta, ckpt.DefaultShardBytes)
}

// WriteDirShards is WriteDir with weights larger than maxShard bytes split
// into shards and an index (ckpt.SaveWeights).
func WriteDirShards(dir string, b *Bundle, dtype ckpt.DType, meta map[string]string, maxShard int64) ([]string, error) {
	cj, err := ckpt.HFConfigJSON(b.Model.Config, dtype)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bundle: export: %w", err)
	}
	tj := b.TokenizerJSON
	if tj == nil {
		tj = tokenizer.BytesJSON()
	}
	gen := b.Generation
	gen.EOS = b.Template.Stops()
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, f := range []struct {
		name string
		data []byte
	}{{ckpt.HFConfig, append(cj, '\n')}, {TokenizerFile, tj}, {GenerationFile, gen.JSON()}} {
		if err := os.WriteFile(path(f.name), f.data, 0o644); err != nil {
			return nil, fmt.Errorf("bundle: export: %w", err)
		}
	}
	mm := maps.Clone(meta)
	if mm == nil {
		mm = map[string]string{}
	}
	mm[ckpt.MetaTokenizer] = b.TokenizerMeta()
	weights, err := ckpt.SaveWeights(dir, b.Model, dtype, mm, maxShard)
	if err != nil {
		return nil, err
	}
	return append(append([]string{path(ckpt.HFConfig)}, weights...), path(TokenizerFile), path(GenerationFile)), nil
}
