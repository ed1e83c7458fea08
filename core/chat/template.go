// Package chat is how whale's local model reads and writes a chat: the
// ChatML template over the model's tokenizer, the rule that fits a chat
// to a context budget, and the policies built on them — Local, the
// model's own (a model.Sampler behind the template), and Tokenized, which
// gives a policy that writes text alone (a scripted one) the tokens the
// model would have seen and written. Callers of a policy (the harness
// runtime) hand it messages and never see a token id they did not get
// back in a completion.
//
// The package must never depend on a harness, and a tokenizer reaches a
// policy only through a Template, so that prompts are rendered in one place.
package chat

import (
	"errors"
	"fmt"
	"slices"

	"whale/core/policy"
	"whale/core/tokenizer"
)

// Template renders chats as the model was trained to read them: ChatML
// (tokenizer.EncodeChat) over the model's tokenizer. Every model whale
// runs is Qwen-shaped and speaks ChatML, so only the tokenizer varies.
type Template struct {
	tok tokenizer.Tokenizer
	// end is <|im_end|>: the end of a turn, which ends every completion.
	end int32
	// stops are the ids that end a completion: end first, then a model's
	// other end-of-sequence ids (generation_config.json's eos_token_id).
	stops []int32
}

// NewTemplate returns the ChatML template over tok, which must have the
// chat special tokens.
func NewTemplate(tok tokenizer.Tokenizer) (*Template, error) {
	_, ok1 := tok.Special(tokenizer.ImStart)
	end, ok2 := tok.Special(tokenizer.ImEnd)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("chat: the tokenizer has no %s and %s tokens, which the chat template needs", tokenizer.ImStart, tokenizer.ImEnd)
	}
	return &Template{tok: tok, end: end, stops: []int32{end}}, nil
}

// WithStops is t with ids also ending a completion (a model's
// end-of-sequence ids, such as Qwen's <|endoftext|>); ids already stops
// are not repeated. t itself is not changed.
func (t *Template) WithStops(ids []int32) *Template {
	c := *t
	c.stops = slices.Clone(t.stops)
	for _, id := range ids {
		if !slices.Contains(c.stops, id) {
			c.stops = append(c.stops, id)
		}
	}
	return &c
}

// Stops are the ids that end a completion, the end-of-turn token first.
func (t *Template) Stops() []int32 { return slices.Clone(t.stops) }

// Tokenizer is the tokenizer the template renders with.
func (t *Template) Tokenizer() tokenizer.Tokenizer { return t.tok }

// Stop is the end-of-turn token, the one token that stops a completion.
func (t *Template) Stop() int32 { return t.end }

// Render is the prompt of msgs: every message, then the assistant's turn
// opened, so that the model's next tokens are its reply.
func (t *Template) Render(msgs []policy.Message) ([]int32, error) {
	tm := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		tm[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	ids, err := tokenizer.EncodeChat(t.tok, tm, true)
	if err != nil {
		return nil, fmt.Errorf("chat: render prompt: %w", err)
	}
	return ids, nil
}

// Text is what a completion says: its tokens decoded, less the stop
// token that ended it.
func (t *Template) Text(toks []int32) string {
	if n := len(toks); n > 0 && slices.Contains(t.stops, toks[n-1]) {
		toks = toks[:n-1]
	}
	return t.tok.Decode(toks)
}

// Reply is text as the model would have written it: its tokens and the
// end-of-turn token (FinishStop), or, when it has maxNew tokens or more
// (maxNew > 0), its first maxNew tokens without one (FinishLength), as a
// model stops at MaxNewTokens with no room left to end its turn.
func (t *Template) Reply(text string, maxNew int) ([]int32, policy.FinishReason) {
	ids := t.tok.Encode(text)
	if maxNew > 0 && len(ids) >= maxNew {
		return ids[:maxNew], policy.FinishLength
	}
	return append(ids, t.end), policy.FinishStop
}

// Prompt is a chat fitted to a budget and rendered.
type Prompt struct {
	IDs []int32
	// Messages are what IDs renders: the chat less the messages dropped,
	// one of them perhaps cut. It is the chat itself when it fitted.
	Messages []policy.Message
	// Dropped counts the messages left out; Cut says one was shortened.
	Dropped int
	Cut     bool
}

// ErrOverBudget is what Fit returns (wrapped) for a chat whose markup
// alone is longer than the budget: no cut can make it fit.
var ErrOverBudget = errors.New("chat: prompt over its context budget")

// Fit renders msgs in at most budget tokens (budget ≤ 0: no bound), by the
// rule harnesses promise for CONTEXT_TOKENS (harnesses/lib/README.md):
// whole messages after the first user message are dropped oldest first
// (the head — system prompt and first user message, the task — and the
// newest message always stay); if that is not enough, the longest
// message is shortened from its end and marked " …", until the prompt
// fits. msgs itself is never changed.
func (t *Template) Fit(msgs []policy.Message, budget int) (Prompt, error) {
	ids, err := t.Render(msgs)
	if err != nil {
		return Prompt{}, err
	}
	if budget <= 0 || len(ids) <= budget {
		return Prompt{IDs: ids, Messages: msgs}, nil
	}
	ms := append([]policy.Message(nil), msgs...)
	head := 0
	for i, m := range ms {
		if m.Role == "user" {
			head = i + 1
			break
		}
	}
	p := Prompt{IDs: ids}
	for len(p.IDs) > budget && len(ms) > head+1 {
		ms = append(ms[:head], ms[head+1:]...)
		p.Dropped++
		if p.IDs, err = t.Render(ms); err != nil {
			return Prompt{}, err
		}
	}
	if p.IDs, p.Cut, err = t.cut(ms, p.IDs, budget); err != nil {
		return Prompt{}, err
	}
	if len(p.IDs) > budget {
		return Prompt{}, fmt.Errorf("%w: %d tokens cannot hold even the chat markup of %d messages", ErrOverBudget, budget, len(ms))
	}
	p.Messages = ms
	return p, nil
}

// cut shortens the longest message of ms (in place) from its end, keeping
// four tokens of slack for the mark, until ids (ms rendered) fit budget
// or the tries run out; it returns the last rendering and whether it cut.
func (t *Template) cut(ms []policy.Message, ids []int32, budget int) ([]int32, bool, error) {
	cut := false
	var err error
	for tries := 0; len(ids) > budget && tries < 2*len(ms)+2; tries++ {
		longest := 0
		for i, m := range ms {
			if len(m.Content) > len(ms[longest].Content) {
				longest = i
			}
		}
		content := t.tok.Encode(ms[longest].Content)
		if len(content) == 0 {
			break
		}
		keep := max(len(content)-(len(ids)-budget)-4, 0)
		ms[longest].Content = t.tok.Decode(content[:keep]) + " …"
		if keep == 0 {
			ms[longest].Content = ""
		}
		cut = true
		if ids, err = t.Render(ms); err != nil {
			return nil, false, err
		}
	}
	return ids, cut, nil
}
