package tokenizer

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// BPE is a byte-level BPE tokenizer read from a Hugging Face tokenizer.json:
// Qwen2, Qwen2.5 and Qwen3 (and other GPT-2-style vocabularies that use
// only the parts listed at Parse). Text is cut at added tokens first, then
// NFC-normalised, split into pre-tokens and merged pre-token by pre-token.
// It adds no BOS or EOS token. A BPE is safe for concurrent use.
type BPE struct {
	tokens  []string         // id → vocabulary string (byte-level spelling, or an added token's content)
	bytes   [][]byte         // id → the bytes it decodes to; nil for an unused id
	ids     map[string]int32 // vocabulary string → id, added tokens included
	byteID  [256]int32       // id of each single-byte token
	merges  map[uint64]merge
	ranked  [][2]int32 // merges in rank order, for export
	special map[int32]bool

	// Added tokens are matched before normalisation (all of Qwen's are);
	// withSpecial matches every one, plain only the non-special ones.
	withSpecial, plain *addedMatcher
	// normalizedAdded matches added tokens marked normalized, after NFC.
	normalizedAdded, normalizedPlain *addedMatcher

	nfc          bool
	split        splitter
	ignoreMerges bool // emit a pre-token that is itself a token without merging
	cache        wordCache
}

// Encode returns the ids of text. Special tokens (<|im_start|>, <|im_end|>,
// <|endoftext|>, …) are never produced: text that spells one is encoded as
// ordinary bytes, so a task or a completion cannot forge a role marker.
// Added tokens that are not special (<think>, <tool_call>, …) are matched,
// which is Hugging Face's encoding with split_special_tokens.
//
// Decode(Encode(s)) == NFC(s) for every string, invalid UTF-8 included.
func (t *BPE) Encode(text string) []int32 {
	return t.encode(text, t.plain, t.normalizedPlain)
}

// EncodeSpecial is Hugging Face's default encoding: every added token in the
// text, special or not, becomes its id. Use it for text whose markers are
// meant (a rendered chat template), never for text a task or model wrote.
func (t *BPE) EncodeSpecial(text string) []int32 {
	return t.encode(text, t.withSpecial, t.normalizedAdded)
}

func (t *BPE) encode(text string, raw, normalized *addedMatcher) []int32 {
	out := make([]int32, 0, len(text)/3+1)
	var s mergeScratch
	var ends []int
	for len(text) > 0 {
		start, end, id := raw.find(text)
		if start < 0 {
			start, end = len(text), len(text)
		}
		if start > 0 {
			seg := text[:start]
			if t.nfc {
				seg = norm.NFC.String(seg)
			}
			for len(seg) > 0 {
				ns, ne, nid := normalized.find(seg)
				if ns < 0 {
					ns, ne = len(seg), len(seg)
				}
				out, ends = t.encodeOrdinary(out, seg[:ns], &s, ends)
				if ns < len(seg) {
					out = append(out, nid)
				}
				seg = seg[ne:]
			}
		}
		if start < len(text) {
			out = append(out, id)
		}
		text = text[end:]
	}
	return out
}

// encodeOrdinary encodes normalised text that holds no added token.
func (t *BPE) encodeOrdinary(out []int32, text string, s *mergeScratch, ends []int) ([]int32, []int) {
	if text == "" {
		return out, ends
	}
	ends = t.split.split(text, ends[:0])
	start := 0
	for _, end := range ends {
		out = t.encodeWord(out, text[start:end], s)
		start = end
	}
	return out, ends
}

func (t *BPE) encodeWord(out []int32, w string, s *mergeScratch) []int32 {
	if len(w) == 1 {
		return append(out, t.byteID[w[0]])
	}
	cacheable := len(w) <= wordCacheMaxLen
	if cacheable {
		if ids, ok := t.cache.get(w); ok {
			return append(out, ids...)
		}
	}
	n := len(out)
	if id, ok := t.wholeWord(w); ok {
		out = append(out, id)
	} else {
		out = t.bpeWord(out, w, s)
	}
	if cacheable {
		t.cache.put(strings.Clone(w), append([]int32(nil), out[n:]...))
	}
	return out
}

// wholeWord is the ignore_merges rule of Llama-3-style tokenizers: a
// pre-token that is itself in the vocabulary is one token.
func (t *BPE) wholeWord(w string) (int32, bool) {
	if !t.ignoreMerges {
		return 0, false
	}
	id, ok := t.ids[byteLevelString([]byte(w))]
	return id, ok && !t.isAdded(id)
}

// Decode renders ids as text: each token's bytes, added tokens as their
// content. Invalid UTF-8 that was encoded comes back byte for byte. Ids
// outside the vocabulary render as U+FFFD so that a model with a padded
// vocabulary can never crash a caller.
func (t *BPE) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.bytes) && t.bytes[id] != nil {
			b.Write(t.bytes[id])
		} else {
			b.WriteString("\uFFFD")
		}
	}
	return b.String()
}

// VocabSize is one more than the largest id, added tokens included (151669
// for Qwen3; its model pads the embedding to 151936).
func (t *BPE) VocabSize() int { return len(t.tokens) }

// Special returns the id of an added token by its content ("<|im_end|>",
// "<think>", …).
func (t *BPE) Special(name string) (int32, bool) {
	id, ok := t.ids[name]
	if !ok || t.bytes[id] == nil || !t.isAdded(id) {
		return 0, false
	}
	return id, true
}

func (t *BPE) isAdded(id int32) bool {
	_, ok := t.special[id]
	return ok
}

// Token returns the vocabulary string of id as tokenizer.json spells it
// (byte-level runes, "Ġ" for a space), for export to other formats.
func (t *BPE) Token(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokens) || t.bytes[id] == nil {
		return "", false
	}
	return t.tokens[id], true
}

// Merges returns the merge rules in rank order as pairs of vocabulary
// strings, for export to other formats.
func (t *BPE) Merges() [][2]string {
	out := make([][2]string, len(t.ranked))
	for i, p := range t.ranked {
		out[i] = [2]string{t.tokens[p[0]], t.tokens[p[1]]}
	}
	return out
}

// IsSpecial reports whether id is an added token marked special in
// tokenizer.json (<|im_start|> is, <think> is not).
func (t *BPE) IsSpecial(id int32) bool { return t.special[id] }
