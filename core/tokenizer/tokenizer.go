// Package tokenizer turns text into token ids and back. It holds the
// Tokenizer interface, the chat rendering shared by every tokenizer, the
// byte tokenizer of whale's built-in model (Bytes) and the byte-level BPE
// tokenizer of Qwen models read from a Hugging Face tokenizer.json (BPE,
// from Load).
//
// The package must never depend on a model or a harness.
package tokenizer

// Tokenizer encodes and decodes text. Encode never produces special tokens:
// text that merely looks like "<|im_end|>" is encoded as ordinary bytes, so a
// task or a model completion can never forge a role marker. (Added tokens
// that tokenizer.json does not mark special, such as Qwen's <think>, are
// text the model writes and are matched.)
type Tokenizer interface {
	Encode(text string) []int32
	// Decode renders ids as text; special tokens render as their names.
	Decode(ids []int32) string
	VocabSize() int
	// Special returns the id of a special token by name ("<|im_start|>",
	// "<|im_end|>", "<|endoftext|>").
	Special(name string) (int32, bool)
}

// Names of the chat special tokens every whale tokenizer provides.
const (
	ImStart   = "<|im_start|>"
	ImEnd     = "<|im_end|>"
	EndOfText = "<|endoftext|>"
)

// Message is one turn of a chat.
type Message struct {
	Role    string // "system", "user", "assistant" or "tool"
	Content string
}
