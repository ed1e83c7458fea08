package tokenizer

import "strings"

// Bytes is the tokenizer of whale's built-in model: one token per byte
// (ids 0–255) followed by the chat special tokens. It needs no vocabulary
// file, round-trips every byte string exactly and has no unknown token.
type Bytes struct{}

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
