package chat

import (
	"context"
	"slices"
	"strings"
	"testing"

	"whale/core/policy"
	"whale/core/tokenizer"
)

// echo replies with a fixed text per key and records the chats it saw.
type echo struct {
	replies map[string]policy.Completion
	seen    []policy.Request
}

func (e *echo) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		e.seen = append(e.seen, r)
		out[i] = e.replies[r.Key]
	}
	return out, nil
}

// A text policy under Tokenize reads the chat as the model would (fitted
// to the budget) and its replies become the tokens the harness runtime
// used to make of scripted text: the end-of-turn token after a reply that
// fits, a cut at MaxNewTokens without one, zero log-probabilities; tokens
// it brings are kept.
func TestTokenizeGivesTextTheModelsTokens(t *testing.T) {
	tm := template(t, tokenizer.Bytes{})
	inner := &echo{replies: map[string]policy.Completion{
		"fits":   {Text: "<answer>13</answer>", Finish: policy.FinishStop},
		"long":   {Text: strings.Repeat("x", 40)},
		"length": {Text: "cut off by", Finish: policy.FinishLength},
		"own":    {Tokens: []int32{'o', 'k', tokenizer.BytesImEnd}, LogProbs: []float32{-1, -2, -3}, Finish: policy.FinishStop},
	}}
	chat := chats()[3].Messages // needs dropping and a cut at 90 tokens
	var reqs []policy.Request
	for _, k := range []string{"fits", "long", "length", "own"} {
		reqs = append(reqs, policy.Request{Key: k, Messages: chat, ContextTokens: 90, MaxNewTokens: 24})
	}
	reqs = append(reqs, policy.Request{Key: "tight", Messages: chat, ContextTokens: 5, MaxNewTokens: 16})
	w := Tokenize(inner, tm)
	if w.Unwrap() != policy.Policy(inner) {
		t.Fatal("Unwrap must give the wrapped policy")
	}
	cs, err := w.Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	fit, err := tm.Fit(chat, 90)
	if err != nil || fit.Dropped == 0 || !fit.Cut {
		t.Fatalf("the chat should need dropping and a cut: %+v %v", fit, err)
	}
	if len(inner.seen) != 4 || inner.seen[0].ContextTokens != 0 || len(inner.seen[0].Messages) != len(fit.Messages) || inner.seen[0].Messages[2] != fit.Messages[2] {
		t.Fatalf("the inner policy must see the fitted chat and no budget; saw %+v", inner.seen)
	}
	for i, c := range cs[:4] {
		if !slices.Equal(c.Prompt, fit.IDs) || c.Dropped != fit.Dropped || !c.Cut || len(c.LogProbs) != len(c.Tokens) {
			t.Fatalf("%s: prompt or fitting not reported: %+v", reqs[i].Key, c)
		}
	}
	check := func(c policy.Completion, text string, n int, fin policy.FinishReason) {
		t.Helper()
		if c.Text != text || len(c.Tokens) != n || c.Finish != fin {
			t.Fatalf("completion %q (%d tokens, %s), want %q (%d, %s)", c.Text, len(c.Tokens), c.Finish, text, n, fin)
		}
	}
	check(cs[0], "<answer>13</answer>", 20, policy.FinishStop)
	if cs[0].Tokens[19] != tokenizer.BytesImEnd || cs[0].LogProbs[0] != 0 {
		t.Fatalf("a reply that fits ends its turn: %v %v", cs[0].Tokens, cs[0].LogProbs)
	}
	check(cs[1], strings.Repeat("x", 24), 24, policy.FinishLength)
	check(cs[2], "cut off by", 10, policy.FinishLength)
	check(cs[3], "ok", 3, policy.FinishStop)
	if cs[3].LogProbs[2] != -3 {
		t.Fatal("tokens a policy brings keep their log-probabilities")
	}
	if cs[4].Finish != policy.FinishPrompt || cs[4].Error == "" {
		t.Fatalf("a chat no cut can fit: %+v", cs[4])
	}
}
