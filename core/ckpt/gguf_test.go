package ckpt

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"whale/core/model"
	"whale/core/tokenizer"
	"whale/kernels"
)

var ggufQwen3 = model.Config{ModelType: "qwen3", VocabSize: 264, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 2,
	NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 12, RMSNormEps: 1e-6, RopeTheta: 1e6,
	MaxPositionEmbeddings: 4096, TieWordEmbeddings: true, HiddenAct: "silu"}

var ggufQwen2 = model.Config{ModelType: "qwen2", VocabSize: 259, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 1,
	NumAttentionHeads: 4, NumKeyValueHeads: 2, RMSNormEps: 1e-5, RopeTheta: 10000,
	MaxPositionEmbeddings: 2048, TieWordEmbeddings: false, AttentionBias: true, HiddenAct: "silu"}

var ggufQwen2NoBias = func() model.Config { c := ggufQwen2; c.AttentionBias = false; return c }()

// wantGGUFTensors is, for cfg, every tensor llama.cpp looks for, with its
// HF source and shape as ggml lists it (fastest-varying first), written
// out from llama.cpp's tensor names rather than from the writer's table.
func wantGGUFTensors(cfg model.Config) map[string]struct {
	hf   string
	dims []uint64
} {
	type ent = struct {
		hf   string
		dims []uint64
	}
	C, F, V, hd := uint64(cfg.HiddenSize), uint64(cfg.IntermediateSize), uint64(cfg.VocabSize), uint64(cfg.Dim())
	q, kv := uint64(cfg.NumAttentionHeads)*hd, uint64(cfg.NumKeyValueHeads)*hd
	out := map[string]ent{"token_embd.weight": {"model.embed_tokens.weight", []uint64{C, V}}, "output_norm.weight": {"model.norm.weight", []uint64{C}}}
	if !cfg.TieWordEmbeddings {
		out["output.weight"] = ent{"lm_head.weight", []uint64{C, V}}
	}
	for l := range cfg.NumHiddenLayers {
		b, h := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("model.layers.%d.", l)
		out[b+"attn_norm.weight"] = ent{h + "input_layernorm.weight", []uint64{C}}
		out[b+"attn_q.weight"] = ent{h + "self_attn.q_proj.weight", []uint64{C, q}}
		out[b+"attn_k.weight"] = ent{h + "self_attn.k_proj.weight", []uint64{C, kv}}
		out[b+"attn_v.weight"] = ent{h + "self_attn.v_proj.weight", []uint64{C, kv}}
		out[b+"attn_output.weight"] = ent{h + "self_attn.o_proj.weight", []uint64{q, C}}
		out[b+"ffn_norm.weight"] = ent{h + "post_attention_layernorm.weight", []uint64{C}}
		out[b+"ffn_gate.weight"] = ent{h + "mlp.gate_proj.weight", []uint64{C, F}}
		out[b+"ffn_up.weight"] = ent{h + "mlp.up_proj.weight", []uint64{C, F}}
		out[b+"ffn_down.weight"] = ent{h + "mlp.down_proj.weight", []uint64{F, C}}
		if cfg.ModelType == "qwen3" {
			out[b+"attn_q_norm.weight"] = ent{h + "self_attn.q_norm.weight", []uint64{hd}}
			out[b+"attn_k_norm.weight"] = ent{h + "self_attn.k_norm.weight", []uint64{hd}}
		}
		if cfg.ModelType == "qwen2" { // llama.cpp's qwen2 requires them; zero where the model has none
			out[b+"attn_q.bias"] = ent{h + "self_attn.q_proj.bias", []uint64{q}}
			out[b+"attn_k.bias"] = ent{h + "self_attn.k_proj.bias", []uint64{kv}}
			out[b+"attn_v.bias"] = ent{h + "self_attn.v_proj.bias", []uint64{kv}}
		}
	}
	return out
}

// wantGGUFMetadata is every key of a whale GGUF of cfg but the vocabulary
// arrays, with its value.
func wantGGUFMetadata(cfg model.Config, fileType uint32, name string, eos, pad uint32) map[string]any {
	a := cfg.ModelType
	return map[string]any{
		"general.architecture": a, "general.name": name, "general.file_type": fileType, "general.alignment": uint32(32),
		a + ".context_length": uint32(cfg.MaxPositionEmbeddings), a + ".embedding_length": uint32(cfg.HiddenSize),
		a + ".block_count": uint32(cfg.NumHiddenLayers), a + ".feed_forward_length": uint32(cfg.IntermediateSize),
		a + ".attention.head_count": uint32(cfg.NumAttentionHeads), a + ".attention.head_count_kv": uint32(cfg.NumKeyValueHeads),
		a + ".attention.key_length": uint32(cfg.Dim()), a + ".attention.value_length": uint32(cfg.Dim()),
		a + ".rope.freq_base": float32(cfg.RopeTheta), a + ".attention.layer_norm_rms_epsilon": float32(cfg.RMSNormEps),
		"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2",
		"tokenizer.ggml.eos_token_id": eos, "tokenizer.ggml.padding_token_id": pad, "tokenizer.ggml.bos_token_id": pad,
		"tokenizer.ggml.add_bos_token": false, "tokenizer.chat_template": chatML,
	}
}

// decodeAs reads n elements of ggml type typ back to float32.
func decodeAs(typ uint32, b []byte) []float32 {
	le := binary.LittleEndian
	var out []float32
	switch typ {
	case 0:
		for i := 0; i+4 <= len(b); i += 4 {
			out = append(out, math.Float32frombits(le.Uint32(b[i:])))
		}
	case 1:
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, f16ToF32(le.Uint16(b[i:])))
		}
	case 30:
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, bf16ToF32(le.Uint16(b[i:])))
		}
	}
	return out
}

// roundTo is v as dtype stores it.
func roundTo(d DType, v float32) float32 {
	switch d {
	case BF16:
		return bf16ToF32(bf16FromF32(v))
	case F16:
		return f16ToF32(f16FromF32(v))
	}
	return v
}

// checkGGUFTensors checks that f holds exactly m's tensors under their
// llama.cpp names, shapes and types, at aligned offsets that do not
// overlap, each value the model's rounded to its storage type.
func checkGGUFTensors(t *testing.T, f *ggufFile, m *model.Model, dtype DType) {
	t.Helper()
	want := wantGGUFTensors(m.Config)
	if len(f.tensors) != len(want) {
		t.Errorf("%d tensors, want %d", len(f.tensors), len(want))
	}
	elem := map[uint32]uint64{0: 4, 1: 2, 30: 2}
	var end uint64
	for _, tn := range f.tensors {
		w, ok := want[tn.name]
		if !ok {
			t.Errorf("tensor %s is not one llama.cpp loads", tn.name)
			continue
		}
		delete(want, tn.name)
		wantType := map[DType]uint32{F32: 0, F16: 1, BF16: 30}[dtype]
		if len(w.dims) == 1 {
			wantType = 0 // llama.cpp keeps 1-D tensors in F32
		}
		if !slices.Equal(tn.dims, w.dims) || tn.typ != wantType || tn.off%32 != 0 || tn.off < end {
			t.Errorf("tensor %s: dims %v type %d at %d; want dims %v type %d at an offset ≥ %d aligned to 32", tn.name, tn.dims, tn.typ, tn.off, w.dims, wantType, end)
			continue
		}
		b, err := f.tensorData(tn, elem[tn.typ])
		if err != nil {
			t.Error(err)
			continue
		}
		end = tn.off + uint64(len(b))
		src, err := m.ReadParam(w.hf)
		if err != nil && strings.HasSuffix(w.hf, ".bias") && !m.Config.AttentionBias {
			src, err = make([]float32, w.dims[0]), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		got := decodeAs(tn.typ, b)
		storage := dtype
		if len(w.dims) == 1 {
			storage = F32
		}
		for i, v := range src {
			if got[i] != roundTo(storage, v) {
				t.Errorf("tensor %s element %d = %v, want %v (%v as %s)", tn.name, i, got[i], roundTo(storage, v), v, storage)
				break
			}
		}
	}
	for name := range want {
		t.Errorf("tensor %s missing", name)
	}
}

func TestGGUFHoldsEveryKeyAndTensorOfTheModelAndItsBytesTokenizer(t *testing.T) {
	for _, c := range []struct {
		cfg      model.Config
		dtype    DType
		fileType uint32
	}{{ggufQwen3, F32, 0}, {ggufQwen3, BF16, 32}, {ggufQwen2, F16, 1}, {ggufQwen2, BF16, 32}, {ggufQwen2NoBias, F32, 0}} {
		t.Run(fmt.Sprintf("%s/bias=%v/%s", c.cfg.ModelType, c.cfg.AttentionBias, c.dtype), func(t *testing.T) {
			m, err := model.New(c.cfg, kernels.NewCPU(), 11)
			if err != nil {
				t.Fatal(err)
			}
			b, err := EncodeGGUF(m, tokenizer.Bytes{}, c.dtype, "whale-test")
			if err != nil {
				t.Fatal(err)
			}
			f, err := readGGUF(b)
			if err != nil {
				t.Fatal(err)
			}
			if f.version != 3 {
				t.Errorf("version %d, want 3", f.version)
			}
			want := wantGGUFMetadata(c.cfg, c.fileType, "whale-test", uint32(tokenizer.BytesImEnd), uint32(tokenizer.BytesEndOfText))
			for k, v := range want {
				if got, ok := f.kv[k]; !ok || !reflect.DeepEqual(got, v) {
					t.Errorf("key %s = %#v (present %v), want %#v", k, got, ok, v)
				}
			}
			vocabKeys := []string{"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"}
			if len(f.keys) != len(want)+len(vocabKeys) {
				t.Errorf("keys %v: want exactly %d", f.keys, len(want)+len(vocabKeys))
			}
			tokens, _ := f.kv["tokenizer.ggml.tokens"].([]string)
			types, _ := f.kv["tokenizer.ggml.token_type"].([]int32)
			merges, _ := f.kv["tokenizer.ggml.merges"].([]string)
			if len(tokens) != c.cfg.VocabSize || len(types) != c.cfg.VocabSize || merges == nil || len(merges) != 0 {
				t.Fatalf("%d tokens, %d types, merges %v; want %d, %d and none", len(tokens), len(types), merges, c.cfg.VocabSize, c.cfg.VocabSize)
			}
			// GPT-2's byte alphabet, written out: printable ASCII is
			// itself, space is Ġ (U+0120), newline Ċ (U+010A), 0x00 Ā.
			for id, s := range map[int]string{'A': "A", '~': "~", ' ': "Ġ", '\n': "Ċ", 0: "Ā", 0xff: "ÿ", 0xa0: "ł", 0xad: "Ń"} {
				if tokens[id] != s || types[id] != tokenNormal {
					t.Errorf("token %d = %q type %d, want %q normal", id, tokens[id], types[id], s)
				}
			}
			for id, s := range map[int32]string{tokenizer.BytesEndOfText: "<|endoftext|>", tokenizer.BytesImStart: "<|im_start|>", tokenizer.BytesImEnd: "<|im_end|>"} {
				if tokens[id] != s || types[id] != tokenControl {
					t.Errorf("token %d = %q type %d, want %q control", id, tokens[id], types[id], s)
				}
			}
			for id := 259; id < c.cfg.VocabSize; id++ {
				if tokens[id] != fmt.Sprintf("[PAD%d]", id) || types[id] != tokenUnused {
					t.Errorf("token %d = %q type %d, want an unused pad", id, tokens[id], types[id])
				}
			}
			if len(slices.Compact(slices.Sorted(slices.Values(tokens)))) != len(tokens) {
				t.Error("two ids share a token string")
			}
			checkGGUFTensors(t, f, m, c.dtype)
		})
	}
}

func TestGGUFCarriesAQwenVocabularyWithItsMergesAndAddedTokens(t *testing.T) {
	tok, err := tokenizer.Load("../tokenizer/testdata/qwen3_tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	cfg := ggufQwen3
	cfg.VocabSize = 151936 // Qwen3 pads its embedding past the tokenizer's 151669
	cfg.HiddenSize, cfg.IntermediateSize, cfg.NumHiddenLayers, cfg.HeadDim = 8, 8, 1, 4
	m, err := model.New(cfg, kernels.NewCPU(), 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeGGUF(m, tok, F16, "qwen3-shaped")
	if err != nil {
		t.Fatal(err)
	}
	f, err := readGGUF(b)
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := f.kv["tokenizer.ggml.tokens"].([]string)
	types, _ := f.kv["tokenizer.ggml.token_type"].([]int32)
	merges, _ := f.kv["tokenizer.ggml.merges"].([]string)
	if len(tokens) != cfg.VocabSize || len(types) != cfg.VocabSize {
		t.Fatalf("%d tokens, %d types, want %d", len(tokens), len(types), cfg.VocabSize)
	}
	want := tok.Merges()
	if len(merges) != len(want) || len(merges) < 100000 {
		t.Fatalf("%d merges, want the tokenizer's %d", len(merges), len(want))
	}
	for i, p := range want {
		if merges[i] != p[0]+" "+p[1] {
			t.Fatalf("merge %d = %q, want %q", i, merges[i], p[0]+" "+p[1])
		}
	}
	if merges[0] != "Ġ Ġ" {
		t.Errorf("first merge %q, want Qwen's \"Ġ Ġ\"", merges[0])
	}
	for _, c := range []struct {
		text string
		typ  int32
	}{{"<|im_start|>", tokenControl}, {"<|im_end|>", tokenControl}, {"<|endoftext|>", tokenControl}, {"<think>", tokenUserDefined}, {"</think>", tokenUserDefined}, {"<|fim_prefix|>", tokenControl}, {"<|file_sep|>", tokenControl}} {
		id, ok := tok.Special(c.text)
		if !ok || tokens[id] != c.text || types[id] != c.typ {
			t.Errorf("%s: id %d (%v) holds %q type %d, want type %d", c.text, id, ok, tokens[id], types[id], c.typ)
		}
	}
	for _, s := range []string{"hello", "Ġworld", "ĠĠĠ", "ä¸Ń"} { // plain vocabulary, byte-level spelled
		id := slices.Index(tokens, s)
		if id < 0 || types[id] != tokenNormal {
			t.Errorf("vocabulary string %q: id %d, want a normal token", s, id)
		} else if got, _ := tok.Token(int32(id)); got != s {
			t.Errorf("id %d is %q in the file and %q in the tokenizer", id, s, got)
		}
	}
	if tokens[151935] != "[PAD151935]" || types[151935] != tokenUnused {
		t.Errorf("last id %q type %d, want an unused pad", tokens[151935], types[151935])
	}
	eos, _ := tok.Special("<|im_end|>")
	if f.kv["tokenizer.ggml.eos_token_id"] != uint32(eos) {
		t.Errorf("eos %v, want %d", f.kv["tokenizer.ggml.eos_token_id"], eos)
	}
	checkGGUFTensors(t, f, m, F16)
}

func TestGGUFRefusesWhatLlamaCppCouldNotLoad(t *testing.T) {
	cfg := ggufQwen3
	cfg.VocabSize = 200 // fewer embeddings than the byte tokenizer's 259 tokens
	m, err := model.New(cfg, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EncodeGGUF(m, tokenizer.Bytes{}, F32, "x"); err == nil || !strings.Contains(err.Error(), "259 tokens, more than the model's vocabulary of 200") {
		t.Errorf("small vocabulary: %v", err)
	}
	m2, err := model.New(ggufQwen3, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EncodeGGUF(m2, tokenizer.Bytes{}, DType("Q4_0"), "x"); err == nil || !strings.Contains(err.Error(), "Q4_0") {
		t.Errorf("unknown dtype: %v", err)
	}
	biased := ggufQwen3
	biased.AttentionBias = true
	m3, err := model.New(biased, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EncodeGGUF(m3, tokenizer.Bytes{}, F32, "x"); err == nil || !strings.Contains(err.Error(), "qwen3 has no q/k/v biases") {
		t.Errorf("qwen3 with biases: %v", err)
	}
	wide := ggufQwen2
	wide.HeadDim = 8 // 4 heads × 8 ≠ 16
	m4, err := model.New(wide, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EncodeGGUF(m4, tokenizer.Bytes{}, F32, "x"); err == nil || !strings.Contains(err.Error(), "head_dim × heads = hidden_size") {
		t.Errorf("qwen2 with a wide head: %v", err)
	}
	for _, bad := range []string{"model.layers.0.mlp.fc1.weight", "model.layers.x.mlp.up_proj.weight", "transformer.wte.weight"} {
		if _, err := ggufName(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ggufName(%q) = %v", bad, err)
		}
	}
}
