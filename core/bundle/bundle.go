// Package bundle is a model with what travels with it: its tokenizer, the
// chat template over that tokenizer, its generation settings and where it
// came from. Every --model path (the embedded base model, a whale model
// file, a Hugging Face folder) opens as one Bundle, so no caller pairs a
// model with a tokenizer by hand; it also writes a Bundle out as a Hugging
// Face folder.
//
// The package must never know about runs, harnesses or the store.
package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"whale/core/basemodel"
	"whale/core/chat"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/tokenizer"
	"whale/kernels"

	"whale/internal/readcap"
)

// Kinds of source a Bundle comes from.
const (
	KindEmbedded = "embedded" // the built-in base model
	KindFile     = "file"     // a whale model file (safetensors with the config in its metadata)
	KindDir      = "hf-dir"   // a Hugging Face model folder
)

// Bundle is a loaded model and everything that belongs to it.
type Bundle struct {
	Model     *model.Model
	Tokenizer tokenizer.Tokenizer
	// TokenizerJSON is the tokenizer.json Tokenizer was parsed from; nil
	// for the byte tokenizer, which needs no file.
	TokenizerJSON []byte
	// Template is ChatML over Tokenizer, its stops the end of turn and
	// Generation's end-of-sequence ids.
	Template   *chat.Template
	Generation Generation

	Kind string // KindEmbedded, KindFile or KindDir
	Name string // basemodel.Name, or the file's or folder's path
	// SHA256 identifies the source: of the file, or of the folder's files
	// (DirHash).
	SHA256 string
	// DataSeed is the seed of the corpus the model was pretrained on
	// (whale model files; 1 when unknown).
	DataSeed uint64
}

// New bundles m with its tokenizer (tokJSON the file it came from, nil
// for tokenizer.Bytes) and generation settings, after checking that they
// belong together: every tokenizer id and end-of-sequence id must be a row
// of the model's embedding. what names the source in errors.
func New(m *model.Model, tok tokenizer.Tokenizer, tokJSON []byte, gen Generation, what string) (*Bundle, error) {
	if _, isBytes := tok.(tokenizer.Bytes); !isBytes && tokJSON == nil {
		return nil, fmt.Errorf("bundle: %s: the tokenizer comes without its tokenizer.json, which a run stores to resume with it", what)
	}
	v := m.Config.VocabSize
	if n := tok.VocabSize(); n > v {
		return nil, fmt.Errorf("bundle: %s: the tokenizer has ids up to %d, but the model's vocab_size is %d: it is not this model's tokenizer", what, n-1, v)
	}
	for _, id := range gen.EOS {
		if id < 0 || int(id) >= v {
			return nil, fmt.Errorf("bundle: %s: eos_token_id %d is outside the model's vocab_size %d", what, id, v)
		}
	}
	t, err := chat.NewTemplate(tok)
	if err != nil {
		return nil, fmt.Errorf("bundle: %s: %w", what, err)
	}
	if err := checkFinite(m, what); err != nil {
		return nil, err
	}
	return &Bundle{Model: m, Tokenizer: tok, TokenizerJSON: tokJSON, Template: t.WithStops(gen.EOS), Generation: gen, DataSeed: 1}, nil
}

// Policy is the bundle's model as a chat policy.
func (b *Bundle) Policy(opts model.SamplerOptions) (*chat.Local, error) {
	return chat.NewLocalWith(b.Model, b.Template, opts)
}

// TokenizerHash is the sha256 of TokenizerJSON, "" for the byte tokenizer.
func (b *Bundle) TokenizerHash() string {
	if b.TokenizerJSON == nil {
		return ""
	}
	return sha256Hex(b.TokenizerJSON)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Open opens what a --model flag names on be: "" is the embedded base
// model, a folder a Hugging Face model folder (LoadDir), anything else a
// whale model file (LoadFile).
func Open(path string, be kernels.Backend) (*Bundle, error) {
	if path == "" {
		return Embedded(be)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("bundle: --model: %w", err)
	}
	if fi.IsDir() {
		return LoadDir(path, be)
	}
	return LoadFile(path, be)
}

// Embedded is the built-in base model with the byte tokenizer.
func Embedded(be kernels.Backend) (*Bundle, error) {
	m, err := basemodel.Load(be)
	if err != nil {
		return nil, err
	}
	in, err := basemodel.EmbeddedInfo()
	if err != nil {
		return nil, err
	}
	b, err := New(m, basemodel.Tokenizer(), nil, Generation{}, basemodel.Name)
	if err != nil {
		return nil, err
	}
	b.Kind, b.Name, b.SHA256, b.DataSeed = KindEmbedded, basemodel.Name, basemodel.SHA256, in.DataSeed
	return b, nil
}

// LoadFile opens a whale model file: safetensors whose metadata carries
// the config (ckpt.DecodeModel) and names the tokenizer
// (ckpt.MetaTokenizer): "bytes" or absent for tokenizer.Bytes, or
// "sha256:HEX" for the tokenizer.json beside the file, whose hash it
// must have.
func LoadFile(path string, be kernels.Backend) (*Bundle, error) {
	raw, err := readcap.File(path, readcap.Weights, "--model")
	if err != nil {
		return nil, fmt.Errorf("bundle: read --model: %w", err)
	}
	m, meta, err := ckpt.DecodeModel(raw, path, be)
	if err != nil {
		return nil, err
	}
	tok, tokJSON, err := fileTokenizer(path, meta[ckpt.MetaTokenizer])
	if err != nil {
		return nil, err
	}
	b, err := New(m, tok, tokJSON, Generation{}, path)
	if err != nil {
		return nil, err
	}
	b.Kind, b.Name, b.SHA256 = KindFile, path, sha256Hex(raw)
	if v, ok := meta[ckpt.MetaDataSeed]; ok {
		if b.DataSeed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, fmt.Errorf("bundle: %s: metadata %q = %q is not a seed", path, ckpt.MetaDataSeed, v)
		}
	}
	return b, nil
}

// fileTokenizer resolves a model file's tokenizer metadata.
func fileTokenizer(path, ref string) (tokenizer.Tokenizer, []byte, error) {
	if ref == "" || ref == "bytes" {
		return tokenizer.NewBytes(), nil, nil
	}
	want, ok := strings.CutPrefix(ref, "sha256:")
	if !ok {
		return nil, nil, fmt.Errorf("bundle: %s: metadata %s = %q: want \"bytes\" or \"sha256:HEX\"", path, ckpt.MetaTokenizer, ref)
	}
	tp := filepath.Join(filepath.Dir(path), TokenizerFile)
	tb, err := readcap.File(tp, readcap.Tokenizer, "tokenizer")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("bundle: %s names its tokenizer %s, but there is no %s beside it", path, ref, tp)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: %w", err)
	}
	if got := sha256Hex(tb); got != want {
		return nil, nil, fmt.Errorf("bundle: %s has sha256 %s, but %s names its tokenizer sha256:%s", tp, got, path, want)
	}
	tok, err := tokenizer.Parse(tb)
	if err != nil {
		return nil, nil, fmt.Errorf("bundle: %s: %w", tp, err)
	}
	return tok, tb, nil
}

// TokenizerMeta is the ckpt.MetaTokenizer value that names b's tokenizer
// in a model file.
func (b *Bundle) TokenizerMeta() string {
	if b.TokenizerJSON == nil {
		return "bytes"
	}
	return "sha256:" + b.TokenizerHash()
}
