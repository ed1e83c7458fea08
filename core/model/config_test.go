package model

import (
	"strings"
	"testing"

	"whale/kernels"
)

func TestPresetsValidate(t *testing.T) {
	for _, name := range PresetNames() {
		c, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
	c, _ := Preset("110m")
	if n := c.NumParams(); n < 105e6 || n > 115e6 {
		t.Errorf("110m preset has %d parameters", n)
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
}

func TestValidateNamesField(t *testing.T) {
	base, _ := Preset("tiny")
	for field, mut := range map[string]func(*Config){
		"model_type":          func(c *Config) { c.ModelType = "llama" },
		"vocab_size":          func(c *Config) { c.VocabSize = 0 },
		"num_key_value_heads": func(c *Config) { c.NumKeyValueHeads = 3 },
		"head_dim":            func(c *Config) { c.HeadDim = 5 },
		"rms_norm_eps":        func(c *Config) { c.RMSNormEps = 0 },
		"rope_theta":          func(c *Config) { c.RopeTheta = 0 },
		"hidden_act":          func(c *Config) { c.HiddenAct = "gelu" },
	} {
		c := base
		mut(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: got %v, want an error naming the field", field, err)
		}
	}
}

func TestParseConfig(t *testing.T) {
	q2, err := ParseConfig([]byte(`{"model_type":"qwen2","vocab_size":100,"hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"rms_norm_eps":1e-6,"rope_theta":1e6,
		"max_position_embeddings":128,"tie_word_embeddings":true,"hidden_act":"silu"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !q2.AttentionBias || q2.QKNorm() || q2.Dim() != 16 {
		t.Errorf("qwen2 config: bias %v, qk-norm %v, head dim %d; want true, false, 16", q2.AttentionBias, q2.QKNorm(), q2.Dim())
	}
	q3, err := ParseConfig([]byte(`{"model_type":"qwen3","vocab_size":100,"hidden_size":64,"intermediate_size":128,
		"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"rms_norm_eps":1e-6,
		"rope_theta":1e6,"max_position_embeddings":128,"attention_bias":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if q3.AttentionBias || !q3.QKNorm() || q3.Dim() != 32 {
		t.Errorf("qwen3 config: bias %v, qk-norm %v, head dim %d", q3.AttentionBias, q3.QKNorm(), q3.Dim())
	}
	if _, err := ParseConfig([]byte(`{"model_type":"qwen3"`)); err == nil {
		t.Error("truncated JSON accepted")
	}
	bad := q3
	bad.NumHiddenLayers = 0
	if _, err := New(bad, kernels.NewCPU(), 1); err == nil {
		t.Error("New accepted an invalid config")
	}
}

func TestParamNamesAndShapes(t *testing.T) {
	m := tinyModel(t, kernels.NewCPU(), 1)
	seen := map[string]bool{}
	for _, p := range m.Params() {
		seen[p.Name] = true
		n := 1
		for _, s := range p.Shape {
			n *= s
		}
		if n != p.Len {
			t.Errorf("%s: shape %v holds %d, Len %d", p.Name, p.Shape, n, p.Len)
		}
	}
	for _, want := range []string{"model.embed_tokens.weight", "model.layers.1.self_attn.q_proj.weight",
		"model.layers.0.self_attn.k_proj.bias", "model.layers.0.self_attn.q_norm.weight", "model.layers.1.mlp.down_proj.weight",
		"model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"} {
		if !seen[want] {
			t.Errorf("parameter %s missing", want)
		}
	}
	v, err := m.ReadParam("model.norm.weight")
	if err != nil || len(v) != 16 || v[0] != 1 {
		t.Fatalf("ReadParam(model.norm.weight) = %v, %v", v, err)
	}
	v[3] = 2.5
	if err := m.WriteParam("model.norm.weight", v); err != nil {
		t.Fatal(err)
	}
	if w, _ := m.ReadParam("model.norm.weight"); w[3] != 2.5 {
		t.Fatal("WriteParam did not take")
	}
	if err := m.WriteParam("model.norm.weight", v[:3]); err == nil {
		t.Error("short write accepted")
	}
	if _, err := m.ReadParam("nope"); err == nil {
		t.Error("unknown name accepted")
	}
}
