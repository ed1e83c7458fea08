// Package policy defines what a model looks like to the rest of whale: a
// batch of token prompts in, a batch of sampled completions out. It holds the
// interface and its request and completion types and nothing else, so that
// harnesses, search and the engine can drive the local model, a scripted test
// policy or a remote endpoint alike.
package policy

import "context"

// FinishReason says why a completion ended.
type FinishReason string

const (
	// FinishStop: a stop token was sampled (it is included in Tokens).
	FinishStop FinishReason = "stop"
	// FinishLength: MaxNewTokens were generated without a stop token.
	FinishLength FinishReason = "length"
	// FinishContext: the prompt plus completion reached the model's context
	// window before either of the above.
	FinishContext FinishReason = "context"
)

// Request asks for one sampled completion of a prompt.
type Request struct {
	// Key identifies the sequence (for example "train/17#3/call2"). The local
	// model derives the sequence's RNG stream from Seed and Key, so a request
	// samples the same tokens whatever else shares its batch. Scripted and
	// oracle policies use it to know which episode is asking.
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
	// Finish is FinishStop.
	Tokens []int32
	// LogProbs[i] is log p(Tokens[i]) under the distribution the token was
	// sampled from, before temperature, top-k and top-p were applied, so that
	// weight-phase operators see the model's own probabilities.
	LogProbs []float32
	Finish   FinishReason
}

// Policy generates completions for a batch of requests. Completions are
// returned in request order. Implementations must be safe for use by one
// caller at a time; they need not be safe for concurrent callers.
type Policy interface {
	Generate(ctx context.Context, reqs []Request) ([]Completion, error)
}
