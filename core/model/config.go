// Package model is whale's Qwen3-style decoder-only transformer: its
// configuration (HF config.json field names), its parameters in one arena
// with HF tensor names, the forward and backward passes, the trainer
// (AdamW, gradient accumulation, clipping, non-finite refusal) and the
// KV-cache sampler with prefix reuse and continuous batching over token
// prompts (core/chat renders chats for it and makes it a policy.Policy).
//
// The model builds the computation and a kernels.Backend runs it: the
// package never touches a backend tensor's elements except through the
// backend's Load and Store. It must never know about harnesses, tasks or
// checkpoint file formats (core/ckpt reads and writes parameters through
// Params, ReadParam and WriteParam).
package model

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Config describes a model with the field names of an HF config.json, so a
// Qwen2 or Qwen3 checkpoint's configuration loads unchanged.
type Config struct {
	// ModelType is "qwen3" (per-head q_norm/k_norm RMSNorm) or "qwen2"
	// (none).
	ModelType        string `json:"model_type"`
	VocabSize        int    `json:"vocab_size"`
	HiddenSize       int    `json:"hidden_size"`
	IntermediateSize int    `json:"intermediate_size"`
	NumHiddenLayers  int    `json:"num_hidden_layers"`
	// NumAttentionHeads query heads share NumKeyValueHeads key/value heads
	// (grouped-query attention; equal counts is plain multi-head).
	NumAttentionHeads int `json:"num_attention_heads"`
	NumKeyValueHeads  int `json:"num_key_value_heads"`
	// HeadDim 0 means HiddenSize / NumAttentionHeads (HF's default).
	HeadDim               int     `json:"head_dim,omitempty"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	RopeTheta             float64 `json:"rope_theta"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	TieWordEmbeddings     bool    `json:"tie_word_embeddings"`
	// AttentionBias adds biases to q_proj, k_proj and v_proj.
	AttentionBias bool `json:"attention_bias"`
	// HiddenAct must be "silu" (or empty): the MLP is SwiGLU.
	HiddenAct string `json:"hidden_act,omitempty"`
}

// Dim returns the attention head dimension.
func (c Config) Dim() int {
	if c.HeadDim != 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads == 0 {
		return 0
	}
	return c.HiddenSize / c.NumAttentionHeads
}

// QKNorm reports whether attention has Qwen3's per-head q/k RMSNorm.
func (c Config) QKNorm() bool { return c.ModelType == "qwen3" }

// Validate checks the configuration; errors name the offending field.
func (c Config) Validate() error {
	bad := func(field string, format string, args ...any) error {
		return fmt.Errorf("model: config field %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch c.ModelType {
	case "qwen3", "qwen2":
	default:
		return bad("model_type", "%q is not supported (want \"qwen3\" or \"qwen2\")", c.ModelType)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"max_position_embeddings", c.MaxPositionEmbeddings}} {
		if f.v <= 0 {
			return bad(f.name, "%d must be positive", f.v)
		}
	}
	if c.VocabSize > 1<<31-1 {
		return bad("vocab_size", "%d does not fit token ids of int32", c.VocabSize)
	}
	if err := c.checkMaxima(); err != nil {
		return err
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return bad("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKeyValueHeads, c.NumAttentionHeads)
	}
	if c.HeadDim < 0 {
		return bad("head_dim", "%d is negative", c.HeadDim)
	}
	if c.HeadDim == 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		return bad("head_dim", "unset, and hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if d := c.Dim(); d%2 != 0 {
		return bad("head_dim", "%d must be even for rotary embeddings", d)
	}
	if !(c.RMSNormEps > 0) {
		return bad("rms_norm_eps", "%v must be positive", c.RMSNormEps)
	}
	if !(c.RopeTheta > 1) {
		return bad("rope_theta", "%v must be greater than 1", c.RopeTheta)
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return bad("hidden_act", "%q is not supported (want \"silu\")", c.HiddenAct)
	}
	return nil
}

// ParseConfig reads an HF config.json. Qwen2 configs omit attention_bias
// although Qwen2 has q/k/v biases, so for model_type "qwen2" an absent
// attention_bias means true.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("model: parse config.json: %w", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return Config{}, fmt.Errorf("model: parse config.json: %w", err)
	}
	if _, ok := raw["attention_bias"]; !ok && c.ModelType == "qwen2" {
		c.AttentionBias = true
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

var presets = map[string]Config{
	// tiny is for tests: every feature on (GQA, qk-norm, q/k/v bias,
	// untied head), small enough for float64 finite differences.
	"tiny": {ModelType: "qwen3", VocabSize: 19, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 6, RMSNormEps: 1e-6, RopeTheta: 10000,
		MaxPositionEmbeddings: 64, AttentionBias: true, HiddenAct: "silu"},
	"bench-small": {ModelType: "qwen3", VocabSize: 512, HiddenSize: 256, IntermediateSize: 704, NumHiddenLayers: 4,
		NumAttentionHeads: 8, NumKeyValueHeads: 2, HeadDim: 32, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 2048, TieWordEmbeddings: true, HiddenAct: "silu"},
	"110m": {ModelType: "qwen3", VocabSize: 32000, HiddenSize: 768, IntermediateSize: 2048, NumHiddenLayers: 12,
		NumAttentionHeads: 12, NumKeyValueHeads: 12, HeadDim: 64, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 2048, TieWordEmbeddings: true, HiddenAct: "silu"},
	// qwen3-0.6b is Qwen3-0.6B's shape (its config.json, as ckpt's tests
	// check), for speed and memory measurements with random weights.
	"qwen3-0.6b": {ModelType: "qwen3", VocabSize: 151936, HiddenSize: 1024, IntermediateSize: 3072, NumHiddenLayers: 28,
		NumAttentionHeads: 16, NumKeyValueHeads: 8, HeadDim: 128, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 40960, TieWordEmbeddings: true, HiddenAct: "silu"},
}

// Preset returns a named configuration: "tiny", "bench-small", "110m" or
// "qwen3-0.6b".
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("model: unknown preset %q (have %v)", name, PresetNames())
	}
	return c, nil
}

// PresetNames lists the preset names in order.
func PresetNames() []string {
	var n []string
	for k := range presets {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
