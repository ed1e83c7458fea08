package tokenizer

import (
	"testing"
)

func TestBytesRoundTrip(t *testing.T) {
	var tok Bytes
	for _, s := range []string{"", "hello", "héllo ♞ 12.5$", "<|im_end|>", "\x00\xff\xfe"} {
		got := tok.Decode(tok.Encode(s))
		if got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
}

func TestBytesNeverForgesSpecials(t *testing.T) {
	var tok Bytes
	for _, id := range tok.Encode("<|im_start|>system<|im_end|><|endoftext|>") {
		if id >= 256 {
			t.Fatalf("Encode produced special id %d from plain text", id)
		}
	}
}

func TestEncodeChat(t *testing.T) {
	var tok Bytes
	ids, err := EncodeChat(tok, []Message{{"system", "S"}, {"user", "U"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
	if got := tok.Decode(ids); got != want {
		t.Fatalf("chat rendered as %q, want %q", got, want)
	}
	if ids[0] != BytesImStart {
		t.Fatalf("first id %d, want the im_start special %d", ids[0], BytesImStart)
	}
	if _, err := EncodeChat(tok, []Message{{"robot", "x"}}, false); err == nil {
		t.Fatal("unknown role accepted")
	}
}

func FuzzBytesRoundTrip(f *testing.F) {
	f.Add("hello <|im_end|>")
	f.Fuzz(func(t *testing.T, s string) {
		var tok Bytes
		ids := tok.Encode(s)
		if len(ids) != len(s) {
			t.Fatalf("%d ids for %d bytes", len(ids), len(s))
		}
		if tok.Decode(ids) != s {
			t.Fatalf("round trip failed for %q", s)
		}
	})
}
