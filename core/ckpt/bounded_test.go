package ckpt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"whale/kernels"
)

// TestHFConfigSizesAreBoundedAndHeadDimZeroRefused: config.json sizes
// past the stated maxima fail naming the field (before anything is
// allocated), and head_dim 0 is an error, not "absent".
func TestHFConfigSizesAreBoundedAndHeadDimZeroRefused(t *testing.T) {
	for _, c := range []struct{ field, value, want string }{
		{"vocab_size", "1000000000", "vocab_size"},
		{"hidden_size", "1000000000", "hidden_size"},
		{"num_hidden_layers", "1000000", "num_hidden_layers"},
		{"intermediate_size", "1000000000", "intermediate_size"},
		{"max_position_embeddings", "1000000000000", "max_position_embeddings"},
		{"head_dim", "0", "head_dim"},
		{"head_dim", "-4", "head_dim"},
		{"head_dim", `"128"`, "head_dim"},
	} {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(qwen3Config), &raw); err != nil {
			t.Fatal(err)
		}
		raw[c.field] = json.RawMessage(c.value)
		b, _ := json.Marshal(raw)
		if _, err := ParseHFConfig(b, "config.json"); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "config.json") {
			t.Errorf("%s = %s: %v, want an error naming config.json and %s", c.field, c.value, err, c.want)
		}
	}
}

// TestLoadDirChecksConfigAgainstHeaderFirst: a config.json whose sizes
// disagree with the weights' headers fails naming the tensor, before the
// model it describes is allocated (a vocabulary of 1M rows at hidden 2048
// is 8 GiB of float32).
func TestLoadDirChecksConfigAgainstHeaderFirst(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir, nil)
	var raw map[string]json.RawMessage
	b, err := os.ReadFile(filepath.Join(dir, HFConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["vocab_size"], raw["hidden_size"] = json.RawMessage("1000000"), json.RawMessage("2048")
	delete(raw, "head_dim")
	b, _ = json.Marshal(raw)
	if err := os.WriteFile(filepath.Join(dir, HFConfig), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, _, err = LoadDir(dir, kernels.NewCPU())
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "model.embed_tokens.weight") || !strings.Contains(err.Error(), "config") {
		t.Fatalf("config.json larger than its weights: %v, want the tensor and the config named", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<30 {
		t.Fatalf("refusing the config allocated %d bytes first", grew)
	}
}
