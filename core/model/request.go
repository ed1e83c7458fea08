package model

import "whale/core/policy"

// The Sampler's own requests: token prompts in, sampled tokens out. A chat
// reaches it through core/chat's Local, which renders the messages with
// the model's template and tokenizer; nothing else builds token prompts
// but tests, benchmarks and the pretraining drills. Finish reasons are
// policy's, so that a completion keeps its meaning on the way out.

// Request asks for one sampled continuation of a token prompt.
type Request struct {
	// Key identifies the sequence. The sequence's RNG stream comes from
	// Seed and Key, so a request samples the same tokens whatever else
	// shares its batch.
	Key string
	// Prompt is the full prompt, special tokens included.
	Prompt []int32
	// MaxNewTokens bounds the completion length (> 0).
	MaxNewTokens int
	// Temperature 0 means greedy decoding.
	Temperature float32
	// TopK 0 means no top-k filter; TopP 0 or 1 means no nucleus filter.
	TopK int
	TopP float32
	// Stop lists token ids that end the completion.
	Stop []int32
	// Seed is the run seed; see Key.
	Seed uint64
}

// Completion is the answer to one Request.
type Completion struct {
	// Tokens are the generated tokens, the stop token included when
	// Finish is policy.FinishStop.
	Tokens []int32
	// LogProbs[i] is log p(Tokens[i]) under the distribution the token was
	// sampled from, before temperature, top-k and top-p were applied.
	LogProbs []float32
	// Entropy is the mean over Tokens of the entropy (nats) of
	// softmax(logits), the distribution before temperature, top-k and
	// top-p, each token was drawn from: how much the model still explores.
	Entropy float32
	Finish  policy.FinishReason
}

// Result is one finished request of a Stream.
type Result struct {
	// ID is the id the request was submitted under.
	ID         int
	Completion Completion
}
