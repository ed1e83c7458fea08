package tokenizer

import (
	"bytes"
	"encoding/json"
)

// BytesJSON is a Hugging Face tokenizer.json that encodes exactly as Bytes
// does, for exporting the built-in model where other tools expect a
// tokenizer file: a byte-level BPE whose vocabulary is the 256 byte tokens
// in byte order (id b is byte b) and no merges, so every byte stays its own
// token whatever the pre-tokenizer cuts; no normaliser (Bytes does not
// NFC-normalise); and the three chat special tokens at Bytes' ids.
// TestBytesJSONEncodesLikeBytes holds Parse(BytesJSON()) to Bytes.
func BytesJSON() []byte {
	vocab := make(map[string]int, 256)
	for b := 0; b < 256; b++ {
		vocab[string(byteRune[b])] = b
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	f := map[string]any{
		"version":    "1.0",
		"truncation": nil,
		"padding":    nil,
		"added_tokens": []hfAddedToken{
			{ID: BytesEndOfText, Content: EndOfText, Special: true},
			{ID: BytesImStart, Content: ImStart, Special: true},
			{ID: BytesImEnd, Content: ImEnd, Special: true},
		},
		"normalizer": nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]string{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			byteLevel,
		}},
		"post_processor": nil,
		"decoder":        byteLevel,
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": []string{}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		panic("tokenizer: encode BytesJSON: " + err.Error()) // only plain maps and strings: cannot fail
	}
	return buf.Bytes()
}
