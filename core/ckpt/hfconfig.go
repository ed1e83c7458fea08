package ckpt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"whale/core/model"
)

// hfArchitectures maps the architectures whale implements to their
// config.json model_type.
var hfArchitectures = map[string]string{"Qwen3ForCausalLM": "qwen3", "Qwen2ForCausalLM": "qwen2"}

// ParseHFConfig reads a Hugging Face config.json (name is used in errors)
// and refuses, naming the field, what whale's decoder would compute
// differently: another architecture, rope scaling, sliding-window or
// non-full attention layers, mixtures of experts, quantisation. Fields that
// only matter to other programs (torch_dtype, bos/eos ids, initializer
// range) are ignored; generation settings come from generation_config.json.
func ParseHFConfig(data []byte, name string) (model.Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return model.Config{}, fmt.Errorf("ckpt: %s: not a JSON object: %w", name, err)
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("ckpt: %s: field %s: %s", name, field, fmt.Sprintf(format, args...))
	}
	var mt string
	if v, ok := raw["model_type"]; ok {
		if err := json.Unmarshal(v, &mt); err != nil {
			return model.Config{}, bad("model_type", "want a string: %v", err)
		}
	}
	if v, ok := raw["architectures"]; ok {
		var archs []string
		if err := json.Unmarshal(v, &archs); err != nil {
			return model.Config{}, bad("architectures", "want a list of strings: %v", err)
		}
		if len(archs) != 1 || hfArchitectures[archs[0]] == "" {
			return model.Config{}, bad("architectures", "%v is not supported (whale runs Qwen3ForCausalLM and Qwen2ForCausalLM)", archs)
		}
		if want := hfArchitectures[archs[0]]; mt != want {
			return model.Config{}, bad("model_type", "%q does not match architecture %s (want %q)", mt, archs[0], want)
		}
	}
	if err := refuseHFFields(raw, bad); err != nil {
		return model.Config{}, err
	}
	if v, ok := raw["rope_parameters"]; ok {
		// transformers 5 writes rope_theta inside rope_parameters.
		var rp struct {
			Type  string  `json:"rope_type"`
			Theta float64 `json:"rope_theta"`
		}
		if err := json.Unmarshal(v, &rp); err != nil || (rp.Type != "" && rp.Type != "default") {
			return model.Config{}, bad("rope_parameters", "%s is not supported (whale implements default RoPE only)", v)
		}
		if _, ok := raw["rope_theta"]; !ok {
			raw["rope_theta"], _ = json.Marshal(rp.Theta)
			data, _ = json.Marshal(raw) // re-encoding decoded JSON cannot fail
		}
	}
	if v, ok := raw["head_dim"]; ok && strings.TrimSpace(string(v)) != "null" {
		var hd float64
		if err := json.Unmarshal(v, &hd); err != nil {
			return model.Config{}, bad("head_dim", "want a number: %v", err)
		}
		if hd <= 0 {
			// 0 is not "absent": whale would derive hidden_size /
			// num_attention_heads where transformers reads 0.
			return model.Config{}, bad("head_dim", "%s: a head needs at least one dimension (leave the field out for the model type's default)", v)
		}
	}
	if _, ok := raw["head_dim"]; !ok && mt == "qwen3" {
		// transformers' Qwen3Config defaults head_dim to 128, not to
		// hidden_size / num_attention_heads as Qwen2 and whale do.
		raw["head_dim"] = json.RawMessage("128")
		data, _ = json.Marshal(raw)
	}
	c, err := model.ParseConfig(data)
	if err != nil {
		return model.Config{}, fmt.Errorf("ckpt: %s: %s", name, strings.TrimPrefix(err.Error(), "model: "))
	}
	return c, nil
}

// refuseHFFields fails on the config.json fields whale cannot honour.
func refuseHFFields(raw map[string]json.RawMessage, bad func(field, format string, args ...any) error) error {
	isSet := func(k string) bool {
		v, ok := raw[k]
		s := strings.TrimSpace(string(v))
		return ok && s != "null" && s != "false" && s != "0" && s != "{}" && s != "[]"
	}
	for _, f := range []struct{ field, why string }{
		{"rope_scaling", "rope scaling (YaRN, linear, dynamic) is not implemented: whale's RoPE is plain"},
		{"use_sliding_window", "sliding-window attention is not implemented: every layer attends to the whole context"},
		{"quantization_config", "quantised weights are not supported: use a float32, bfloat16 or float16 checkpoint"},
		{"num_experts", "mixture-of-experts layers are not implemented"},
		{"num_local_experts", "mixture-of-experts layers are not implemented"},
	} {
		if isSet(f.field) {
			return bad(f.field, "%s is not supported: %s", raw[f.field], f.why)
		}
	}
	if v, ok := raw["layer_types"]; ok {
		var lt []string
		if err := json.Unmarshal(v, &lt); err != nil {
			return bad("layer_types", "want a list of strings: %v", err)
		}
		if i := slices.IndexFunc(lt, func(s string) bool { return s != "full_attention" }); i >= 0 {
			return bad("layer_types", "layer %d is %q: only full_attention is implemented", i, lt[i])
		}
	}
	return nil
}
