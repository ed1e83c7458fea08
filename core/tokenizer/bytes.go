package tokenizer

import "strings"

// Bytes is the tokenizer of whale's built-in model: one token per byte
// (ids 0–255) followed by the chat special tokens. It needs no vocabulary
// file, round-trips every byte string exactly and has no unknown token.
type Bytes struct{}

// NewBytes returns the byte tokenizer. It is the one place outside tests
// that chooses it: the embedded base model (core/basemodel), a model file
// whose metadata names "bytes" (core/bundle), a run that recorded no
// tokenizer (core/engine) and the base model's corpus (core/pretrain) all
// ask here, so the choice can be found and changed in one line.
func NewBytes() Tokenizer { return Bytes{} }

// Special token ids of the Bytes tokenizer.
const (
	BytesEndOfText int32 = 256
	BytesImStart   int32 = 257
	BytesImEnd     int32 = 258
	bytesVocab           = 259
)

var bytesSpecial = map[string]int32{EndOfText: BytesEndOfText, ImStart: BytesImStart, ImEnd: BytesImEnd}

// Encode returns one id per byte of text.
func (Bytes) Encode(text string) []int32 {
	ids := make([]int32, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int32(text[i])
	}
	return ids
}

// Decode renders byte ids as bytes and special ids as their names. Ids
// outside the vocabulary render as U+FFFD so that a model with a padded
// vocabulary can never crash a caller.
func (Bytes) Decode(ids []int32) string {
	var b strings.Builder
	b.Grow(len(ids))
	for _, id := range ids {
		switch {
		case id >= 0 && id < 256:
			b.WriteByte(byte(id))
		case id == BytesEndOfText:
			b.WriteString(EndOfText)
		case id == BytesImStart:
			b.WriteString(ImStart)
		case id == BytesImEnd:
			b.WriteString(ImEnd)
		default:
			b.WriteString("\uFFFD")
		}
	}
	return b.String()
}

// VocabSize is 259: 256 bytes and three special tokens.
func (Bytes) VocabSize() int { return bytesVocab }

// Special returns the id of a chat special token.
func (Bytes) Special(name string) (int32, bool) {
	id, ok := bytesSpecial[name]
	return id, ok
}

// Token is id's vocabulary string as a byte-level BPE spells it (a byte
// as its printable rune, a special token as its name), for export to other
// formats: written as a byte-level vocabulary without merges, Bytes is
// a GPT-2-style BPE that encodes every byte to its own token.
func (Bytes) Token(id int32) (string, bool) {
	switch {
	case id >= 0 && id < 256:
		return byteLevelString([]byte{byte(id)}), true
	case id == BytesEndOfText:
		return EndOfText, true
	case id == BytesImStart:
		return ImStart, true
	case id == BytesImEnd:
		return ImEnd, true
	}
	return "", false
}

// IsSpecial reports whether id is one of the chat special tokens.
func (Bytes) IsSpecial(id int32) bool { return id >= 256 && id < bytesVocab }

// Merges is empty: every token is one byte or a special token.
func (Bytes) Merges() [][2]string { return nil }
