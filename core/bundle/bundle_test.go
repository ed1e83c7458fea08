package bundle

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/tokenizer"
	"whale/kernels"
)

// testConfigs cover both architectures, grouped-query and plain
// multi-head attention, tied and untied heads, q/k/v biases, a head_dim
// other than hidden_size/heads and a vocabulary padded past the
// tokenizer's 259 ids, as real checkpoints pad theirs.
var testConfigs = map[string]model.Config{
	"qwen3-gqa-untied-bias": {ModelType: "qwen3", VocabSize: 320, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 128, AttentionBias: true, HiddenAct: "silu"},
	"qwen3-gqa-tied": {ModelType: "qwen3", VocabSize: 259, HiddenSize: 32, IntermediateSize: 40, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 1, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 10000,
		MaxPositionEmbeddings: 128, TieWordEmbeddings: true, HiddenAct: "silu"},
	"qwen2-gqa-untied": {ModelType: "qwen2", VocabSize: 300, HiddenSize: 24, IntermediateSize: 56, NumHiddenLayers: 2,
		NumAttentionHeads: 6, NumKeyValueHeads: 2, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 128, AttentionBias: true, HiddenAct: "silu"},
	"qwen2-mha-tied": {ModelType: "qwen2", VocabSize: 262, HiddenSize: 32, IntermediateSize: 32, NumHiddenLayers: 1,
		NumAttentionHeads: 4, NumKeyValueHeads: 4, RMSNormEps: 1e-6, RopeTheta: 5e5,
		MaxPositionEmbeddings: 128, TieWordEmbeddings: true, AttentionBias: true, HiddenAct: "silu"},
}

// randomBundle is a model of cfg whose every parameter is random (norm
// weights around 1, biases and q/k norms far from their initial values,
// so that a reader that skipped one would be caught), with the byte
// tokenizer.
func randomBundle(t *testing.T, cfg model.Config, seed uint64) *Bundle {
	t.Helper()
	m, err := model.New(cfg, kernels.NewCPU(), seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, p := range m.Params() {
		v := make([]float32, p.Len)
		for i := range v {
			switch {
			case strings.HasSuffix(p.Name, "norm.weight"):
				v[i] = float32(1 + 0.2*rng.NormFloat64())
			case strings.HasSuffix(p.Name, ".bias"):
				v[i] = float32(0.1 * rng.NormFloat64())
			default:
				v[i] = float32(0.15 * rng.NormFloat64())
			}
		}
		if err := m.WriteParam(p.Name, v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := New(m, tokenizer.Bytes{}, nil, Generation{}, "test")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testIDs(v int, seed uint64) []int32 {
	rng := rand.New(rand.NewPCG(seed, 11))
	ids := make([]int32, 13)
	for i := range ids {
		ids[i] = int32(rng.IntN(v))
	}
	return ids
}

// TestExportThenLoadGivesIdenticalLogits: a model written as a Hugging
// Face folder in float32 and read back is the same model, bit for bit,
// with the same tokenizer and stops.
func TestExportThenLoadGivesIdenticalLogits(t *testing.T) {
	for name, cfg := range testConfigs {
		b := randomBundle(t, cfg, 3)
		dir := filepath.Join(t.TempDir(), name)
		files, err := WriteDir(dir, b, ckpt.F32, map[string]string{"note": "x"})
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 4 {
			t.Fatalf("%s: wrote %v", name, files)
		}
		got, err := Open(dir, kernels.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		wantCfg := cfg
		wantCfg.HeadDim = cfg.Dim() // config.json always states head_dim
		if got.Kind != KindDir || got.Model.Config != wantCfg {
			t.Fatalf("%s: read back as %s with config %+v", name, got.Kind, got.Model.Config)
		}
		if _, ok := got.Tokenizer.(tokenizer.Bytes); !ok || got.TokenizerJSON != nil {
			t.Fatalf("%s: the byte tokenizer came back as %T", name, got.Tokenizer)
		}
		if !slices.Equal(got.Template.Stops(), b.Template.Stops()) {
			t.Fatalf("%s: stops %v, want %v", name, got.Template.Stops(), b.Template.Stops())
		}
		ids := testIDs(cfg.VocabSize, 5)
		want, err := b.Model.Logits(ids)
		if err != nil {
			t.Fatal(err)
		}
		have, err := got.Model.Logits(ids)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if want[i] != have[i] {
				t.Fatalf("%s: logit %d = %v after the round trip, %v before", name, i, have[i], want[i])
			}
		}
	}
}

// TestBF16FolderLoadsTheRoundedWeights: a bfloat16 folder loads as the
// float32 model whose weights are the bf16 values exactly.
func TestBF16FolderLoadsTheRoundedWeights(t *testing.T) {
	b := randomBundle(t, testConfigs["qwen3-gqa-untied-bias"], 4)
	dir := t.TempDir()
	if _, err := WriteDir(dir, b, ckpt.BF16, nil); err != nil {
		t.Fatal(err)
	}
	got, err := LoadDir(dir, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	w, h := b.Model.ParamValues(), got.Model.ParamValues()
	for i := range w {
		if d := h[i] - w[i]; d > 0.004*abs(w[i]) || d < -0.004*abs(w[i]) {
			t.Fatalf("parameter %d = %v, stored %v: more than bf16's half-ulp (2^-8 relative) apart", i, h[i], w[i])
		}
	}
}

func abs(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestLoadDirRefusesAForeignTokenizer: a tokenizer with more ids than the
// model's vocabulary is refused with an error naming both files.
func TestLoadDirRefusesAForeignTokenizer(t *testing.T) {
	cfg := testConfigs["qwen3-gqa-tied"]
	cfg.VocabSize = 200
	b := randomBundle(t, testConfigs["qwen3-gqa-tied"], 1)
	dir := t.TempDir()
	if _, err := WriteDir(dir, b, ckpt.F32, nil); err != nil {
		t.Fatal(err)
	}
	small, err := model.New(cfg, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	cj, err := ckpt.HFConfigJSON(cfg, ckpt.F32)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ckpt.HFConfig), cj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ckpt.SaveModel(filepath.Join(dir, ckpt.HFWeights), small, ckpt.F32, nil); err != nil {
		t.Fatal(err)
	}
	_, err = LoadDir(dir, kernels.NewCPU())
	for _, w := range []string{TokenizerFile, ckpt.HFConfig, "258", "vocab_size 200"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want one containing %q", err, w)
		}
	}
	if _, err := New(small, tokenizer.Bytes{}, nil, Generation{}, "small"); err == nil || !strings.Contains(err.Error(), "vocab_size is 200") {
		t.Errorf("New: error %v, want one naming the model's vocab_size", err)
	}
}

// TestModelFileNamesItsTokenizer: a whale model file whose metadata names
// a tokenizer.json by hash loads with the file beside it, and refuses a
// missing or changed one.
func TestModelFileNamesItsTokenizer(t *testing.T) {
	b := randomBundle(t, testConfigs["qwen3-gqa-untied-bias"], 2)
	// A tokenizer file that is not byte for byte the byte tokenizer's.
	tj := append(tokenizer.BytesJSON(), '\n')
	tok, err := tokenizer.Parse(tj)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = New(b.Model, tok, tj, Generation{EOS: []int32{256}}, "test"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := ckpt.SaveModel(path, b.Model, ckpt.F32, map[string]string{ckpt.MetaTokenizer: b.TokenizerMeta()}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path, kernels.NewCPU()); err == nil || !strings.Contains(err.Error(), "no "+filepath.Join(dir, TokenizerFile)) {
		t.Fatalf("without tokenizer.json: error %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, TokenizerFile), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if got.TokenizerHash() != b.TokenizerHash() || got.Kind != KindFile {
		t.Fatalf("loaded tokenizer %s (%s), want %s", got.TokenizerHash(), got.Kind, b.TokenizerHash())
	}
	if err := os.WriteFile(filepath.Join(dir, TokenizerFile), tokenizer.BytesJSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(path, kernels.NewCPU()); err == nil || !strings.Contains(err.Error(), "names its tokenizer") {
		t.Fatalf("with another tokenizer.json: error %v", err)
	}
}

func TestParseGeneration(t *testing.T) {
	g, err := ParseGeneration([]byte(`{"bos_token_id": 151643, "do_sample": true, "eos_token_id": [151645, 151643],
		"pad_token_id": 151643, "temperature": 0.6, "top_k": 20, "top_p": 0.95, "transformers_version": "4.51.0"}`), "g.json")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.EOS, []int32{151645, 151643}) || *g.Temperature != 0.6 || *g.TopK != 20 || *g.TopP != 0.95 || !*g.DoSample {
		t.Fatalf("read %+v", g)
	}
	if g, err = ParseGeneration([]byte(`{"eos_token_id": 7}`), "g.json"); err != nil || !slices.Equal(g.EOS, []int32{7}) {
		t.Fatalf("a single eos id: %+v, %v", g, err)
	}
	back, err := ParseGeneration(g.JSON(), "back.json")
	if err != nil || !slices.Equal(back.EOS, g.EOS) {
		t.Fatalf("written and read back: %+v, %v", back, err)
	}
	for _, bad := range []string{`{"eos_token_id": "x"}`, `{"top_p": 1.5}`, `{"temperature": -1}`, `[1]`} {
		if _, err := ParseGeneration([]byte(bad), "bad.json"); err == nil || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("%s: error %v, want one naming bad.json", bad, err)
		}
	}
}

// TestEOSIdsStopCompletions: generation_config.json's eos ids join the
// end of turn as stops, and a completion's text drops whichever ended it.
func TestEOSIdsStopCompletions(t *testing.T) {
	m := randomBundle(t, testConfigs["qwen3-gqa-tied"], 1).Model
	b, err := New(m, tokenizer.Bytes{}, nil, Generation{EOS: []int32{tokenizer.BytesEndOfText, tokenizer.BytesImEnd}}, "t")
	if err != nil {
		t.Fatal(err)
	}
	if s := b.Template.Stops(); !slices.Equal(s, []int32{tokenizer.BytesImEnd, tokenizer.BytesEndOfText}) {
		t.Fatalf("stops %v", s)
	}
	if got := b.Template.Text([]int32{'h', 'i', tokenizer.BytesEndOfText}); got != "hi" {
		t.Fatalf("text %q", got)
	}
	if _, err := New(m, tokenizer.Bytes{}, nil, Generation{EOS: []int32{400}}, "t"); err == nil || !strings.Contains(err.Error(), "eos_token_id 400") {
		t.Fatalf("an eos id past the vocabulary: error %v", err)
	}
}

// exportedModel is one of testConfigs' random models written as a float32
// Hugging Face folder, with whale's logits on its test ids.
type exportedModel struct {
	name   string
	cfg    model.Config
	dir    string
	ids    []int32
	logits []float32 // (len(ids), VocabSize)
}

// exportTestModels writes every model of testConfigs (seed 9, names
// sorted) into folders under a temporary directory.
func exportTestModels(t *testing.T) []exportedModel {
	t.Helper()
	names := make([]string, 0, len(testConfigs))
	for n := range testConfigs {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []exportedModel
	for _, name := range names {
		cfg := testConfigs[name]
		b := randomBundle(t, cfg, 9)
		dir := filepath.Join(t.TempDir(), name)
		if _, err := WriteDir(dir, b, ckpt.F32, nil); err != nil {
			t.Fatal(err)
		}
		ids := testIDs(cfg.VocabSize, 21)
		logits, err := b.Model.Logits(ids)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, exportedModel{name, cfg, dir, ids, logits})
	}
	return out
}
