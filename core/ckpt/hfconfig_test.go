package ckpt

import (
	"strings"
	"testing"

	"whale/core/model"
)

// qwen3Config is Qwen3-0.6B's config.json as Hugging Face ships it.
const qwen3Config = `{
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936
}`

// qwen2Config is Qwen2.5-0.5B's, which has no attention_bias field.
const qwen2Config = `{
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936
}`

func TestParseHFConfigReadsQwen3AndQwen2(t *testing.T) {
	c, err := ParseHFConfig([]byte(qwen3Config), "q3/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType != "qwen3" || c.Dim() != 128 || c.NumKeyValueHeads != 8 || !c.TieWordEmbeddings || c.AttentionBias || c.RopeTheta != 1e6 || c.VocabSize != 151936 {
		t.Fatalf("qwen3 config read as %+v", c)
	}
	if p, _ := model.Preset("qwen3-0.6b"); p != c {
		t.Fatalf("the qwen3-0.6b preset %+v is not Qwen3-0.6B's config %+v", p, c)
	}
	c, err = ParseHFConfig([]byte(qwen2Config), "q2/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType != "qwen2" || !c.AttentionBias || c.QKNorm() || c.Dim() != 64 {
		t.Fatalf("qwen2 config read as %+v (want q/k/v biases, no q/k norm, head_dim 896/14)", c)
	}
	// An absent head_dim is 128 for Qwen3, as in transformers' Qwen3Config.
	noHD := strings.Replace(qwen3Config, `"head_dim": 128,`, ``, 1)
	noHD = strings.Replace(noHD, `"hidden_size": 1024`, `"hidden_size": 512`, 1)
	if c, err = ParseHFConfig([]byte(noHD), "nohd/config.json"); err != nil || c.Dim() != 128 {
		t.Fatalf("qwen3 without head_dim: %d, %v (want 128)", c.Dim(), err)
	}
	// transformers 5 writes rope_theta inside rope_parameters.
	v5 := strings.Replace(qwen3Config, `"rope_theta": 1000000,`, `"rope_parameters": {"rope_type": "default", "rope_theta": 5000},`, 1)
	if c, err = ParseHFConfig([]byte(v5), "v5/config.json"); err != nil || c.RopeTheta != 5000 {
		t.Fatalf("rope_parameters: theta %v, err %v", c.RopeTheta, err)
	}
}

func TestParseHFConfigRefusesWhatWhaleCannotRun(t *testing.T) {
	for _, tc := range []struct{ from, to, field string }{
		{`"rope_scaling": null`, `"rope_scaling": {"rope_type": "yarn", "factor": 4.0}`, "field rope_scaling"},
		{`"use_sliding_window": false`, `"use_sliding_window": true`, "field use_sliding_window"},
		{`["Qwen3ForCausalLM"]`, `["LlamaForCausalLM"]`, "field architectures"},
		{`"model_type": "qwen3"`, `"model_type": "qwen2"`, "field model_type"},
		{`"use_cache": true`, `"use_cache": true, "quantization_config": {"quant_method": "awq"}`, "field quantization_config"},
		{`"use_cache": true`, `"use_cache": true, "layer_types": ["full_attention", "sliding_attention"]`, "field layer_types"},
		{`"use_cache": true`, `"use_cache": true, "num_experts": 128`, "field num_experts"},
		{`"rope_theta": 1000000,`, `"rope_parameters": {"rope_type": "llama3", "rope_theta": 5000},`, "field rope_parameters"},
		{`"hidden_act": "silu"`, `"hidden_act": "gelu"`, "field hidden_act"},
		{`"num_key_value_heads": 8`, `"num_key_value_heads": 6`, "field num_key_value_heads"},
	} {
		src := strings.Replace(qwen3Config, tc.from, tc.to, 1)
		if src == qwen3Config {
			t.Fatalf("%s: the test's edit %q matched nothing", tc.field, tc.from)
		}
		_, err := ParseHFConfig([]byte(src), "m/config.json")
		if err == nil || !strings.Contains(err.Error(), "m/config.json") || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming m/config.json and the %s", tc.to, err, tc.field)
		}
	}
}
