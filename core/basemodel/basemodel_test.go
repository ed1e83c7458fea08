package basemodel

import (
	"strings"
	"testing"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/pretrain"
	"whale/core/tokenizer"
	"whale/kernels"
)

func TestEmbeddedHashMatchesRecorded(t *testing.T) {
	if got := Hash(); got != SHA256 {
		t.Fatalf("embedded base.safetensors has sha256 %s; recorded %s", got, SHA256)
	}
}

func TestEmbeddedLoadsWithinBudget(t *testing.T) {
	if n := len(Bytes()); n > 16<<20 {
		t.Fatalf("embedded model is %d bytes, over the 16 MiB budget", n)
	}
	m, err := Load(kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Config.NumParams(); p > 8_000_000 {
		t.Fatalf("%d parameters, over the 8 M budget", p)
	}
	if m.Config.VocabSize < Tokenizer().VocabSize() {
		t.Fatalf("vocab %d smaller than the tokenizer's %d", m.Config.VocabSize, Tokenizer().VocabSize())
	}
	in, err := EmbeddedInfo()
	if err != nil {
		t.Fatal(err)
	}
	if in.SHA256 != SHA256 || in.Steps < 1 || len(in.CorpusHash) != 64 || in.Tokenizer != "bytes" || in.Config != m.Config {
		t.Fatalf("provenance %+v", in)
	}
	// The model predicts from a chat prompt: finite logits over the vocab.
	ids, err := tokenizer.EncodeChat(Tokenizer(), []tokenizer.Message{{Role: "user", Content: "2 + 2"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	logits, err := m.Logits(ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range logits[len(logits)-m.Config.VocabSize:] {
		if v != v {
			t.Fatal("NaN logit")
		}
	}
}

func TestDescribeRejectsForeignFiles(t *testing.T) {
	if _, err := Describe([]byte("not safetensors"), "junk"); err == nil {
		t.Fatal("junk described")
	}
	m, err := model.New(pretrain.TinyConfig(), kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ckpt.EncodeModel(m, ckpt.BF16, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Describe(b, "plain.safetensors"); err == nil || !strings.Contains(err.Error(), "plain.safetensors") || !strings.Contains(err.Error(), "whale.seed") {
		t.Fatalf("a model without pretrain metadata: %v", err)
	}
}
