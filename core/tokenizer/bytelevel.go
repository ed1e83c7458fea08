package tokenizer

// Byte-level BPE (GPT-2, Qwen) spells every byte as a printable rune so that
// vocabulary strings are valid text: printable Latin-1 bytes stand for
// themselves, the other 68 bytes for the runes U+0100 onwards, in byte order.
var (
	byteRune [256]rune     // byte → the rune that spells it
	runeByte map[rune]byte // inverse of byteRune
)

func init() {
	runeByte = make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = next
			next++
		}
		runeByte[byteRune[b]] = byte(b)
	}
}

// byteLevelString spells raw bytes the way vocabulary strings do.
func byteLevelString(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = byteRune[c]
	}
	return string(r)
}

// byteLevelBytes turns a vocabulary string back into the bytes it stands
// for. A rune outside the byte alphabet stands for its own UTF-8, as in the
// Hugging Face ByteLevel decoder.
func byteLevelBytes(tok string) []byte {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		if b, ok := runeByte[r]; ok {
			out = append(out, b)
		} else {
			out = append(out, string(r)...)
		}
	}
	return out
}
