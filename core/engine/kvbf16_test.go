package engine

import (
	"strings"
	"testing"
)

// TestSampleKVBF16IsLocalOnly: bfloat16 KV caches are a setting of the
// local model's sampler, refused beside a server policy, and off unless
// asked for.
func TestSampleKVBF16IsLocalOnly(t *testing.T) {
	cfg := tinyConfig(t)
	if cfg.SampleKVBF16 {
		t.Fatal("a preset turns bfloat16 KV caches on")
	}
	cfg.SampleKVBF16 = true
	if err := cfg.Validate(); err != nil {
		t.Fatalf("bfloat16 KV caches on the local model: %v", err)
	}
	cfg.Condition = "harness-only"
	cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1", Model: "m"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "sample_kv_bf16") {
		t.Errorf("bfloat16 KV caches with a server policy: %v, want a refusal naming sample_kv_bf16", err)
	}
}
