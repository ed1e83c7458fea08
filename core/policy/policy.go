// Package policy defines what a model looks like to the rest of whale: a
// batch of token prompts in, a batch of sampled completions out, or, for a
// policy that batches continuously, a stream that takes requests at any
// time and hands back each completion as it finishes. It holds the
// interfaces and their request and completion types and nothing else, so
// that harnesses, search and the engine can drive the local model, a
// scripted test policy or a remote endpoint alike.
package policy

import (
	"context"
	"errors"
)

// Message is one chat message.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role    string `json:"role"`
	Content string `json:"content"`
}

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

// Streamer is implemented by policies that batch continuously: requests
// join the batch being generated while others are under way, and each
// completion is handed back the moment it finishes instead of when the
// slowest request of its batch does. A caller with work that depends on
// earlier completions (multi-turn episodes) keeps the policy's batch full
// this way. A completion must not depend on how requests were submitted:
// streaming a set of requests yields exactly what Generate yields for it.
type Streamer interface {
	Policy
	// OpenStream starts a stream. A policy serves one caller: while a
	// stream is open, a second OpenStream or a Generate call may fail.
	OpenStream() (Stream, error)
}

// Stream is an open continuous batch; see Streamer. Like a Policy it is
// for one caller at a time.
type Stream interface {
	// Submit queues req under the caller's id, which Next hands back with
	// its completion. It does not wait for generation. A request the
	// policy cannot serve (an empty prompt, a token outside the
	// vocabulary) is refused with an error naming the id and key, and the
	// stream goes on as if it had not been submitted. The stream may read
	// req.Prompt and req.Stop until their completion is returned.
	Submit(id int, req Request) error
	// Next waits for the next completion to finish, in finishing order
	// (not submission order), or for ctx to end. With no request in
	// flight it returns ErrStreamIdle at once. Any other error leaves the
	// stream spent: later calls return it again, and only Close remains.
	Next(ctx context.Context) (Result, error)
	// Close drops every request still in flight and frees what they held.
	// It may be called more than once.
	Close() error
}

// Result is one finished request of a Stream.
type Result struct {
	// ID is the id the request was submitted under.
	ID         int
	Completion Completion
}

// ErrStreamIdle is what Stream.Next returns when no request is in flight:
// waiting would never end, since only the caller submits.
var ErrStreamIdle = errors.New("policy: stream has no request in flight")
