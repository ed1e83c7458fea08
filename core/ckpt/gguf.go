package ckpt

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"whale/core/model"
	"whale/core/tokenizer"
)

// GGUF v3 (ggml's docs/gguf.md) as llama.cpp loads a Qwen2 or Qwen3 model:
// a header, metadata key-value pairs, tensor descriptions, then each
// tensor's data at an offset aligned to ggufAlignment. Every integer is
// little-endian; a string is its uint64 byte length then its bytes.

const (
	ggufMagic     = "GGUF"
	ggufVersion   = 3
	ggufAlignment = 32
)

// Metadata value types.
const (
	ggufUint8   uint32 = 0
	ggufInt8    uint32 = 1
	ggufUint16  uint32 = 2
	ggufInt16   uint32 = 3
	ggufUint32  uint32 = 4
	ggufInt32   uint32 = 5
	ggufFloat32 uint32 = 6
	ggufBool    uint32 = 7
	ggufString  uint32 = 8
	ggufArray   uint32 = 9
	ggufUint64  uint32 = 10
	ggufInt64   uint32 = 11
	ggufFloat64 uint32 = 12
)

// ggml tensor types, and llama.cpp's general.file_type for a file whose
// matrices are all of one of them (1-D tensors stay F32 in every case, as
// llama.cpp's converter writes them).
var ggmlType = map[DType]uint32{F32: 0, F16: 1, BF16: 30}
var llamaFileType = map[DType]uint32{F32: 0, F16: 1, BF16: 32}

// llama.cpp's token types.
const (
	tokenNormal      int32 = 1
	tokenControl     int32 = 3
	tokenUserDefined int32 = 4
	tokenUnused      int32 = 5
)

// Vocabulary is what a GGUF file needs of a tokenizer besides encoding:
// each id's vocabulary string, which ids are special, and the merges.
// tokenizer.BPE and tokenizer.Bytes have it.
type Vocabulary interface {
	tokenizer.Tokenizer
	// Token is id's string in byte-level spelling (an added token's
	// content as is); false for an id the vocabulary does not use.
	Token(id int32) (string, bool)
	IsSpecial(id int32) bool
	Merges() [][2]string
}

// chatML is the chat template written into the file for llama.cpp's
// chat endpoints: the ChatML markup core/chat renders.
const chatML = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}" +
	"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"

// looksSpecial is llama.cpp's converter's test of an added token that
// is not marked special but is written as a control token all the same:
// <|…|> (and the full-width ｜ form), and four literals. llama.cpp's
// loader overrides such tokens to control whatever the file says.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") || strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>")
}

// ggufName is the llama.cpp name of an HF tensor name.
func ggufName(hf string) (string, error) {
	switch hf {
	case "model.embed_tokens.weight":
		return "token_embd.weight", nil
	case "model.norm.weight":
		return "output_norm.weight", nil
	case "lm_head.weight":
		return "output.weight", nil
	}
	var layer int
	var rest string
	if n, _ := fmt.Sscanf(hf, "model.layers.%d.%s", &layer, &rest); n == 2 {
		for _, m := range [][2]string{
			{"input_layernorm.", "attn_norm."}, {"self_attn.q_proj.", "attn_q."}, {"self_attn.k_proj.", "attn_k."},
			{"self_attn.v_proj.", "attn_v."}, {"self_attn.o_proj.", "attn_output."}, {"self_attn.q_norm.", "attn_q_norm."},
			{"self_attn.k_norm.", "attn_k_norm."}, {"post_attention_layernorm.", "ffn_norm."}, {"mlp.gate_proj.", "ffn_gate."},
			{"mlp.up_proj.", "ffn_up."}, {"mlp.down_proj.", "ffn_down."},
		} {
			if suffix, ok := strings.CutPrefix(rest, m[0]); ok && (suffix == "weight" || suffix == "bias") {
				return fmt.Sprintf("blk.%d.%s%s", layer, m[1], suffix), nil
			}
		}
	}
	return "", fmt.Errorf("ckpt: gguf: tensor %s has no llama.cpp name", hf)
}

// ggufKV is one metadata pair; val is a uint32, int32, float32, bool,
// string, []string or []int32.
type ggufKV struct {
	key string
	val any
}

// ggufMetadata is the metadata llama.cpp reads for m's architecture and
// tok's vocabulary, padded with unused ids to the model's vocabulary size.
func ggufMetadata(m *model.Model, tok Vocabulary, dtype DType, name string) ([]ggufKV, error) {
	c := m.Config
	if tok.VocabSize() > c.VocabSize {
		return nil, fmt.Errorf("ckpt: gguf: the tokenizer has %d tokens, more than the model's vocabulary of %d", tok.VocabSize(), c.VocabSize)
	}
	tokens := make([]string, c.VocabSize)
	types := make([]int32, c.VocabSize)
	for id := range tokens {
		s, ok := tok.Token(int32(id))
		switch {
		case !ok || id >= tok.VocabSize():
			tokens[id], types[id] = fmt.Sprintf("[PAD%d]", id), tokenUnused
		case tok.IsSpecial(int32(id)):
			tokens[id], types[id] = s, tokenControl
		default:
			tokens[id], types[id] = s, tokenNormal
			if sid, added := tok.Special(s); added && sid == int32(id) {
				// An added token that is not special (<think>), unless it
				// looks special: llama.cpp's converter makes those control.
				types[id] = tokenUserDefined
				if looksSpecial(s) {
					types[id] = tokenControl
				}
			}
		}
	}
	merges := make([]string, 0, len(tok.Merges()))
	for _, p := range tok.Merges() {
		merges = append(merges, p[0]+" "+p[1])
	}
	ids := map[string]uint32{}
	for _, s := range []string{tokenizer.ImEnd, tokenizer.EndOfText} {
		id, ok := tok.Special(s)
		if !ok {
			return nil, fmt.Errorf("ckpt: gguf: the tokenizer has no %s token", s)
		}
		ids[s] = uint32(id)
	}
	a := c.ModelType
	return []ggufKV{
		{"general.architecture", a},
		{"general.name", name},
		{"general.file_type", llamaFileType[dtype]},
		{"general.alignment", uint32(ggufAlignment)},
		{a + ".context_length", uint32(c.MaxPositionEmbeddings)},
		{a + ".embedding_length", uint32(c.HiddenSize)},
		{a + ".block_count", uint32(c.NumHiddenLayers)},
		{a + ".feed_forward_length", uint32(c.IntermediateSize)},
		{a + ".attention.head_count", uint32(c.NumAttentionHeads)},
		{a + ".attention.head_count_kv", uint32(c.NumKeyValueHeads)},
		{a + ".attention.key_length", uint32(c.Dim())},
		{a + ".attention.value_length", uint32(c.Dim())},
		{a + ".rope.freq_base", float32(c.RopeTheta)},
		{a + ".attention.layer_norm_rms_epsilon", float32(c.RMSNormEps)},
		{"tokenizer.ggml.model", "gpt2"},
		{"tokenizer.ggml.pre", "qwen2"},
		{"tokenizer.ggml.tokens", tokens},
		{"tokenizer.ggml.token_type", types},
		{"tokenizer.ggml.merges", merges},
		{"tokenizer.ggml.eos_token_id", ids[tokenizer.ImEnd]},
		{"tokenizer.ggml.padding_token_id", ids[tokenizer.EndOfText]},
		{"tokenizer.ggml.bos_token_id", ids[tokenizer.EndOfText]},
		{"tokenizer.ggml.add_bos_token", false},
		{"tokenizer.chat_template", chatML},
	}, nil
}

// EncodeGGUF serialises m and its tokenizer as a GGUF v3 file for
// llama.cpp: general.architecture is the model type (qwen3 or qwen2), the
// matrices are stored as dtype and the 1-D tensors (norms, biases) as F32.
// name becomes general.name.
func EncodeGGUF(m *model.Model, tok Vocabulary, dtype DType, name string) ([]byte, error) {
	if _, ok := ggmlType[dtype]; !ok {
		return nil, fmt.Errorf("ckpt: gguf: unknown dtype %q", dtype)
	}
	kvs, err := ggufMetadata(m, tok, dtype, name)
	if err != nil {
		return nil, err
	}
	ts, err := ggufTensors(m, dtype)
	if err != nil {
		return nil, err
	}
	out := []byte(ggufMagic)
	out = binary.LittleEndian.AppendUint32(out, ggufVersion)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(ts)))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(kvs)))
	for _, kv := range kvs {
		out = appendGGUFString(out, kv.key)
		out = appendGGUFValue(out, kv.val)
	}
	var off uint64
	for i := range ts {
		t := &ts[i]
		if len(t.Shape) == 1 {
			t.DType = F32
		}
		gname, err := ggufName(t.Name)
		if err != nil {
			return nil, err
		}
		out = appendGGUFString(out, gname)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(t.Shape)))
		for d := len(t.Shape) - 1; d >= 0; d-- { // ggml lists the fastest-varying dimension first
			out = binary.LittleEndian.AppendUint64(out, uint64(t.Shape[d]))
		}
		out = binary.LittleEndian.AppendUint32(out, ggmlType[t.DType])
		out = binary.LittleEndian.AppendUint64(out, off)
		off = alignUp(off+uint64(numel(t.Shape)*t.DType.size()), ggufAlignment)
	}
	out = padTo(out, ggufAlignment)
	for _, t := range ts {
		out = padTo(appendData(out, t.DType, t.Data), ggufAlignment)
	}
	return out, nil
}

// ggufTensors is m's tensors as llama.cpp's architecture wants them: its
// qwen2 requires q/k/v biases (a model without them gets zero biases,
// the same function) and a head dimension of hidden / heads; its qwen3 has
// no biases at all.
func ggufTensors(m *model.Model, dtype DType) ([]Tensor, error) {
	c := m.Config
	switch {
	case c.ModelType == "qwen3" && c.AttentionBias:
		return nil, fmt.Errorf("ckpt: gguf: llama.cpp's qwen3 has no q/k/v biases, and this model has them (attention_bias)")
	case c.ModelType == "qwen2" && c.Dim()*c.NumAttentionHeads != c.HiddenSize:
		return nil, fmt.Errorf("ckpt: gguf: llama.cpp's qwen2 needs head_dim × heads = hidden_size (have %d × %d ≠ %d)", c.Dim(), c.NumAttentionHeads, c.HiddenSize)
	}
	ts, err := Tensors(m, dtype)
	if err != nil {
		return nil, err
	}
	if c.ModelType == "qwen2" && !c.AttentionBias {
		kv := c.NumKeyValueHeads * c.Dim()
		for l := range c.NumHiddenLayers {
			for _, b := range []struct {
				proj string
				n    int
			}{{"q", c.HiddenSize}, {"k", kv}, {"v", kv}} {
				ts = append(ts, Tensor{Name: fmt.Sprintf("model.layers.%d.self_attn.%s_proj.bias", l, b.proj), Shape: []int{b.n}, DType: F32, Data: make([]float32, b.n)})
			}
		}
	}
	return ts, nil
}

// SaveGGUF writes EncodeGGUF's file to path atomically.
func SaveGGUF(path string, m *model.Model, tok Vocabulary, dtype DType, name string) error {
	b, err := EncodeGGUF(m, tok, dtype, name)
	if err != nil {
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	return writeAtomic(path, b)
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

func padTo(b []byte, a int) []byte {
	for len(b)%a != 0 {
		b = append(b, 0)
	}
	return b
}

func appendGGUFString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// appendGGUFValue writes v's type and v.
func appendGGUFValue(b []byte, v any) []byte {
	le := binary.LittleEndian
	switch x := v.(type) {
	case uint32:
		return le.AppendUint32(le.AppendUint32(b, ggufUint32), x)
	case int32:
		return le.AppendUint32(le.AppendUint32(b, ggufInt32), uint32(x))
	case float32:
		return le.AppendUint32(le.AppendUint32(b, ggufFloat32), math.Float32bits(x))
	case bool:
		b = le.AppendUint32(b, ggufBool)
		if x {
			return append(b, 1)
		}
		return append(b, 0)
	case string:
		return appendGGUFString(le.AppendUint32(b, ggufString), x)
	case []string:
		b = le.AppendUint64(le.AppendUint32(le.AppendUint32(b, ggufArray), ggufString), uint64(len(x)))
		for _, s := range x {
			b = appendGGUFString(b, s)
		}
		return b
	case []int32:
		b = le.AppendUint64(le.AppendUint32(le.AppendUint32(b, ggufArray), ggufInt32), uint64(len(x)))
		for _, n := range x {
			b = le.AppendUint32(b, uint32(n))
		}
		return b
	}
	panic(fmt.Sprintf("ckpt: gguf: no encoding for %T", v)) // ggufMetadata writes only the types above
}
