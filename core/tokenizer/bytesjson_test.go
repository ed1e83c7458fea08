package tokenizer

import (
	"slices"
	"testing"
)

// TestBytesJSONEncodesLikeBytes: the exported tokenizer file of the
// built-in model, read back by Parse, gives Bytes' ids and text for every
// kind of string, special-looking and invalid UTF-8 included, and has
// Bytes' vocabulary size and special ids.
func TestBytesJSONEncodesLikeBytes(t *testing.T) {
	bpe, err := Parse(BytesJSON())
	if err != nil {
		t.Fatal(err)
	}
	var want Bytes
	if bpe.VocabSize() != want.VocabSize() {
		t.Fatalf("vocab size %d, want %d", bpe.VocabSize(), want.VocabSize())
	}
	for _, name := range []string{EndOfText, ImStart, ImEnd} {
		a, okA := bpe.Special(name)
		b, okB := want.Special(name)
		if a != b || okA != okB {
			t.Errorf("special %s: %d %v, want %d %v", name, a, okA, b, okB)
		}
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{"", "hello world", "  two  spaces\n\n\ttab", "héllo ♞ 12.5$", "e\u0301 (not NFC)",
		"日本語のテキスト", "emoji 🐳🧪 ok", "<|im_start|>system\nx<|im_end|><|endoftext|>", "\x00\xff\xfe invalid \xc3",
		"3.14159 1,000,000 -42", "func f() { return x+1 }", "I'll we've they're", string(all)} {
		got, exp := bpe.Encode(s), want.Encode(s)
		if !slices.Equal(got, exp) {
			t.Errorf("Encode(%q) = %v, want %v", s, got, exp)
		}
		if d := bpe.Decode(got); d != want.Decode(exp) {
			t.Errorf("Decode of %q = %q, want %q", s, d, want.Decode(exp))
		}
	}
	ids := []int32{BytesImStart, 'a', BytesImEnd, BytesEndOfText}
	if a, b := bpe.Decode(ids), want.Decode(ids); a != b {
		t.Errorf("Decode of specials = %q, want %q", a, b)
	}
}

// NewBytes is the byte tokenizer: one id per byte, the three chat tokens
// after them, and an exact round trip.
func TestNewBytesIsTheByteTokenizer(t *testing.T) {
	tok := NewBytes()
	if _, ok := tok.(Bytes); !ok {
		t.Fatalf("NewBytes() is %T, want Bytes", tok)
	}
	if n := tok.VocabSize(); n != 259 {
		t.Errorf("vocab %d, want 259", n)
	}
	if id, ok := tok.Special(ImEnd); !ok || id != BytesImEnd {
		t.Errorf("Special(%q) = %d, %v; want %d", ImEnd, id, ok, BytesImEnd)
	}
	s := "whale \x00\xff é"
	if got := tok.Decode(tok.Encode(s)); got != s {
		t.Errorf("round trip %q -> %q", s, got)
	}
}
