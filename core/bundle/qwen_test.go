package bundle

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/policy"
	"whale/core/tokenizer"
	"whale/kernels"
)

// qwen3Folder writes a Qwen3-shaped folder as the Hub ships one — Qwen3's
// own tokenizer.json and generation_config.json, a vocabulary padded to
// 151936 — around a tiny random model of vocabSize rows.
func qwen3Folder(t *testing.T, vocabSize int) string {
	t.Helper()
	zb, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "qwen3_tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zb))
	if err != nil {
		t.Fatal(err)
	}
	tj, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{ModelType: "qwen3", VocabSize: vocabSize, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 40960, TieWordEmbeddings: true, HiddenAct: "silu"}
	m, err := model.New(cfg, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cj, err := ckpt.HFConfigJSON(cfg, ckpt.BF16)
	if err != nil {
		t.Fatal(err)
	}
	gen := `{"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643], "pad_token_id": 151643,
  "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": "4.51.0"}`
	for name, b := range map[string][]byte{ckpt.HFConfig: cj, TokenizerFile: tj, GenerationFile: []byte(gen)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ckpt.SaveModel(filepath.Join(dir, ckpt.HFWeights), m, ckpt.BF16, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestQwen3FolderRunsWithItsTokenizer: a folder with Qwen3's tokenizer and
// generation settings opens with that tokenizer, stops at both of Qwen's
// end-of-sequence ids and samples a chat rendered in Qwen's ids; a
// vocabulary smaller than the tokenizer's is refused.
func TestQwen3FolderRunsWithItsTokenizer(t *testing.T) {
	b, err := Open(qwen3Folder(t, 151936), kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Tokenizer.(*tokenizer.BPE); !ok || b.Tokenizer.VocabSize() != 151669 {
		t.Fatalf("tokenizer %T with %d ids, want Qwen3's BPE with 151669", b.Tokenizer, b.Tokenizer.VocabSize())
	}
	if s := b.Template.Stops(); !slices.Equal(s, []int32{151645, 151643}) {
		t.Fatalf("stops %v, want <|im_end|> 151645 and <|endoftext|> 151643", s)
	}
	if b.Generation.TopK == nil || *b.Generation.TopK != 20 {
		t.Fatalf("generation settings %+v", b.Generation)
	}
	pol, err := b.Policy(model.SamplerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := pol.Generate(context.Background(), []policy.Request{{Key: "k", Messages: []policy.Message{{Role: "user", Content: "2+2?"}},
		MaxNewTokens: 3, Temperature: 1, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// <|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n in Qwen3's ids.
	want := []int32{151644, 872, 198, 17, 10, 17, 30, 151645, 198, 151644, 77091, 198}
	if c := cs[0]; !slices.Equal(c.Prompt, want) || len(c.Tokens) == 0 {
		t.Fatalf("prompt %v (want %v), %d tokens sampled", c.Prompt, want, len(c.Tokens))
	}
	_, err = Open(qwen3Folder(t, 151000), kernels.NewCPU())
	if err == nil || !strings.Contains(err.Error(), "151668") || !strings.Contains(err.Error(), "vocab_size 151000") {
		t.Fatalf("a vocabulary smaller than the tokenizer's: error %v", err)
	}
}
