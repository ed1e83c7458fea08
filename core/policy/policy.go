// Package policy defines what a model looks like to the rest of whale: a
// batch of chats in, a batch of sampled replies out, or, for a policy that
// batches continuously, a stream that takes requests at any time and hands
// back each reply as it finishes. A policy renders the chat with its own
// template and tokenizer, so a caller never builds token ids: the local
// model, a scripted test policy and a remote OpenAI-compatible server are
// driven alike. The package holds the interfaces and their request and
// completion types and nothing else.
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
	// FinishStop: the model ended its turn (the end-of-turn token, which
	// is included in Tokens but not in Text).
	FinishStop FinishReason = "stop"
	// FinishLength: MaxNewTokens were generated without the end of the
	// turn.
	FinishLength FinishReason = "length"
	// FinishContext: the prompt plus completion reached the model's context
	// window before either of the above.
	FinishContext FinishReason = "context"
	// FinishPrompt: the messages could not be fitted to ContextTokens at
	// all (their markup alone is longer); nothing was generated and
	// Completion.Error says why. It ends this request alone: the fault is
	// the caller's chat, not the policy's.
	FinishPrompt FinishReason = "prompt"
)

// Request asks for one sampled reply to a chat. A reply ends at the end of
// the assistant's turn, as a chat server's does; there are no other stop
// sequences.
type Request struct {
	// Key identifies the sequence (for example "train/17#3/call2"). The local
	// model derives the sequence's RNG stream from Seed and Key, so a request
	// samples the same tokens whatever else shares its batch. Scripted and
	// oracle policies use it to know which episode is asking.
	Key string
	// Messages is the whole chat so far; the reply is the assistant's
	// next message.
	Messages []Message
	// ContextTokens, if positive, bounds the prompt in the policy's own
	// tokens. The policy fits the chat to it, since only the policy can
	// count its tokens: whole messages after the first user message are
	// dropped oldest first (the system prompt, the task and the newest
	// message always stay), then the longest message is cut from its end,
	// and the completion reports what was dropped and cut. Fitting lives
	// here rather than behind a token-counting method the caller would
	// drive, so that a wrapper passes requests on unchanged (nothing to
	// forward, nothing to forget), the prompt is rendered once, and a server
	// that cannot count exactly fits by its own means. A policy that cannot
	// count at all sends the whole chat and reports nothing dropped.
	ContextTokens int
	// MaxNewTokens bounds the completion length (> 0).
	MaxNewTokens int
	// Temperature 0 means greedy decoding.
	Temperature float32
	// TopK 0 means no top-k filter; TopP 0 or 1 means no nucleus filter.
	TopK int
	TopP float32
	// Seed is the run seed; see Key.
	Seed uint64
}

// Completion is the answer to one Request.
type Completion struct {
	// Text is the reply, without the end-of-turn marker.
	Text string
	// Prompt and Tokens are the token ids the model saw (the chat as
	// fitted and rendered) and produced, the end-of-turn token included
	// when Finish is FinishStop. The local model always fills them; a
	// policy that sees only text (a server) may leave them empty, and
	// nothing can then be trained on the completion.
	Prompt []int32
	Tokens []int32
	// LogProbs[i] is log p(Tokens[i]) under the distribution the token was
	// sampled from, before temperature, top-k and top-p were applied, so that
	// weight-phase operators see the model's own probabilities. A server
	// reports them for the tokens of its own tokenizer, with Tokens empty,
	// and under whichever distribution it computes them on.
	LogProbs []float32
	// Entropy is the mean over Tokens of the entropy (nats) of those same
	// distributions: a weight phase's measure of how much the policy still
	// explores. 0 where the policy does not report it (a server, a script).
	Entropy float32
	Finish  FinishReason
	// Dropped counts the messages left out to fit ContextTokens; Cut is
	// set when a message had to be shortened as well.
	Dropped int
	Cut     bool
	// Error says why, when Finish is FinishPrompt.
	Error string
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

// Laned is implemented by streaming policies that can decode several
// streams at once, each driven by its own goroutine (the local model on a
// CPU with cores to spare: one sampler a core serves a tiny model's batch
// faster than all cores on one sampler, whose steps leave the other cores
// idle between products). What a request yields must not depend on which
// stream served it.
type Laned interface {
	Streamer
	// OpenLanes opens at most n streams (at least one) that may be used
	// at the same time, one goroutine each, and that share the width one
	// OpenStream stream would have. While any of them is open, a further
	// OpenStream, OpenLanes or Generate call may fail.
	OpenLanes(n int) ([]Stream, error)
}

// Stream is an open continuous batch; see Streamer. Like a Policy it is
// for one caller at a time.
type Stream interface {
	// Submit queues req under the caller's id, which Next hands back with
	// its completion. It does not wait for generation. A request the
	// policy cannot serve (no messages, an unknown role, bad sampling
	// options) is refused with an error naming the id and key, and the
	// stream goes on as if it had not been submitted. The stream may read
	// req.Messages until its completion is returned.
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

// GenerateStream is Generate for a policy that streams: it submits every
// request to st under its index, collects the completions in request
// order and closes st. A streaming policy's Generate is this, so that
// batch and stream are one implementation of sampling.
func GenerateStream(ctx context.Context, st Stream, reqs []Request) ([]Completion, error) {
	defer st.Close()
	for i := range reqs {
		if err := st.Submit(i, reqs[i]); err != nil {
			return nil, err
		}
	}
	return Collect(ctx, len(reqs), func(ctx context.Context) (int, Completion, error) {
		res, err := st.Next(ctx)
		return res.ID, res.Completion, err
	})
}

// Collect gathers the n results next delivers, each put at the id it was
// submitted under: the completions of a batch submitted to a stream, in
// request order.
func Collect[C any](ctx context.Context, n int, next func(context.Context) (int, C, error)) ([]C, error) {
	out := make([]C, n)
	for range n {
		id, c, err := next(ctx)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
}
