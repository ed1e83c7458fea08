package tokenizer

import (
	"encoding/json"
	"testing"
)

// tinyTokenizerJSON is a minimal Qwen-shaped tokenizer.json: the 256 byte
// tokens, two merges and one special and one plain added token.
func tinyTokenizerJSON(t testing.TB) []byte {
	vocab := map[string]int32{}
	for b := 0; b < 256; b++ {
		vocab[string(byteRune[b])] = int32(b)
	}
	vocab["he"], vocab["hel"] = 256, 257
	f := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 258, "content": "<|im_end|>", "special": true},
			{"id": 259, "content": "<think>", "special": false},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []map[string]any{
			{"type": "Split", "pattern": map[string]string{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": [][2]string{{"h", "e"}, {"he", "l"}}},
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseTinyTokenizer(t *testing.T) {
	tok, err := Parse(tinyTokenizerJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.EncodeSpecial("hello<|im_end|><think>"); len(got) != 5 || got[0] != 257 || got[3] != 258 || got[4] != 259 {
		t.Fatalf("EncodeSpecial = %v, want [257 l o 258 259]", got)
	}
}

// FuzzParse feeds mutated tokenizer.json files to Parse: it must return an
// error or a tokenizer that round-trips text, never panic.
func FuzzParse(f *testing.F) {
	f.Add(tinyTokenizerJSON(f))
	f.Add([]byte(`{"model": {"vocab": {"a": 1e3}}}`))
	f.Add([]byte(`{"model": {"vocab": {"a": 0}, "merges": ["a b c"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data)
		if err != nil {
			return
		}
		// A mutated pattern can backtrack exponentially in regexp2; only
		// the structure around the Qwen scanner is fuzzed here.
		if _, ok := tok.split.(qwenSplitter); !ok {
			return
		}
		const s = "hello world <|im_end|> <think> 42"
		if got := tok.Decode(tok.Encode(s)); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}
