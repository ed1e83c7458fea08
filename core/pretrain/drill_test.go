package pretrain

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"whale/core/model"
	"whale/core/tokenizer"
	"whale/kernels"
)

func TestDrillsAnswerFromTheirPrompt(t *testing.T) {
	tok := tokenizer.Bytes{}
	for i, s := range drillSequences(rand.New(rand.NewPCG(1, 2)), Mix{Drills: 60, DrillRandom: 0.3}) {
		if len(s.Tokens) != len(s.Mask) {
			t.Fatalf("drill %d: %d tokens, %d mask", i, len(s.Tokens), len(s.Mask))
		}
		text := tok.Decode(s.Tokens)
		cut := strings.LastIndex(text, "assistant\n")
		prompt, reply := text[:cut], text[cut:]
		for _, tag := range []string{"<answer>", "<tool>calc: "} {
			if j := strings.Index(reply, tag); j >= 0 {
				body := reply[j+len(tag):]
				body = body[:strings.Index(body, "</")]
				for _, w := range strings.Fields(body) {
					if len(w) > 1 && !strings.Contains(prompt, w) {
						t.Errorf("drill %d: %q of the reply is not in the prompt:\n%s", i, w, text)
					}
				}
			}
		}
	}
}

// Varied raw copies: every length from short to long occurs, each is the
// same letters twice around the separator, and loss falls on the second
// copy only.
func TestRawCopiesVaryInLength(t *testing.T) {
	lengths := map[int]bool{}
	for i, s := range drillSequences(rand.New(rand.NewPCG(3, 4)), Mix{Drills: 400, DrillRandom: 1, DrillRaw: true, DrillRawVary: true}) {
		n := (len(s.Tokens) - 2) / 2
		if len(s.Tokens) != 2*n+2 || s.Tokens[0] != tokenizer.BytesEndOfText || s.Tokens[n+1] != tokenizer.BytesImStart {
			t.Fatalf("drill %d: not eot, letters, im_start, letters: %v", i, s.Tokens)
		}
		for j := 0; j < n; j++ {
			if s.Tokens[1+j] != s.Tokens[n+2+j] || s.Mask[1+j] != 0 || s.Mask[n+2+j] != 1 {
				t.Fatalf("drill %d: position %d not a masked copy", i, j)
			}
		}
		if n < 8 || n > 160 {
			t.Fatalf("drill %d: %d letters", i, n)
		}
		lengths[n/20] = true
	}
	if len(lengths) < 8 {
		t.Fatalf("lengths fall in only %d of the 20-letter bands between 8 and 160", len(lengths))
	}
}

func TestRawWordCopies(t *testing.T) {
	tok := tokenizer.Bytes{}
	words := 0
	for i, s := range drillSequences(rand.New(rand.NewPCG(5, 6)), Mix{Drills: 200, DrillRandom: 1, DrillRaw: true, DrillRawVary: true, DrillRawWords: 0.5}) {
		n := (len(s.Tokens) - 2) / 2
		first, second := tok.Decode(s.Tokens[1:n+1]), tok.Decode(s.Tokens[n+2:])
		if first != second || s.Mask[n+1] != 0 || s.Mask[n+2] != 1 {
			t.Fatalf("drill %d: %q then %q", i, first, second)
		}
		if strings.Contains(first, " ") {
			words++
		}
	}
	if words < 70 || words > 130 {
		t.Fatalf("%d of 200 bare copies are words, want about half", words)
	}
}

// copier answers every probe by copying from its prompt the way a model
// that copies would: the bare run after end-of-text, the list after
// "Repeat exactly: ", the value of the fact the question asks about.
type copier struct{ lookupsRight bool }

func (c copier) Generate(ctx context.Context, reqs []model.Request) ([]model.Completion, error) {
	tok := tokenizer.Bytes{}
	out := make([]model.Completion, len(reqs))
	for i, r := range reqs {
		text := tok.Decode(r.Prompt)
		var reply string
		switch {
		case r.Prompt[0] == tokenizer.BytesEndOfText:
			reply = tok.Decode(r.Prompt[1 : len(r.Prompt)-1])
		case strings.Contains(text, "Repeat exactly: "):
			s := text[strings.Index(text, "Repeat exactly: ")+len("Repeat exactly: "):]
			reply = "<answer>" + s[:strings.Index(s, "<|im_end|>")] + "</answer>"
		case c.lookupsRight:
			q := text[strings.Index(text, "Question: "):]
			var key string
			if strings.HasPrefix(q, "Question: Where was ") {
				key = q[len("Question: Where was "):strings.Index(q, " born?")]
				v := text[strings.Index(text, key+" was born in ")+len(key+" was born in "):]
				reply = "<answer>" + v[:strings.Index(v, ".")] + "</answer>"
			} else {
				key = q[len("Question: In what year was "):strings.Index(q, " born?")]
				v := text[strings.Index(text, key+" (born ")+len(key+" (born "):]
				reply = "<answer>" + v[:strings.Index(v, ")")] + "</answer>"
			}
		default:
			reply = "<answer>?</answer>"
		}
		ids := tok.Encode(reply)
		if len(ids) > r.MaxNewTokens {
			ids = ids[:r.MaxNewTokens]
		}
		out[i] = model.Completion{Tokens: ids, LogProbs: make([]float32, len(ids))}
	}
	return out, nil
}

func TestProbeScoresCopying(t *testing.T) {
	ctx := context.Background()
	r, err := Probe(ctx, copier{lookupsRight: true}, 24, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Letters != 1 || r.Words != 1 || r.Lookup != 1 || r.N != 24 {
		t.Fatalf("a perfect copier scored %s", r)
	}
	r, err = Probe(ctx, copier{}, 24, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Letters != 1 || r.Words != 1 || r.Lookup != 0 {
		t.Fatalf("a copier without lookups scored %s", r)
	}
	// A fresh tiny model copies nothing.
	m, err := model.New(TinyConfig(), kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err = Probe(ctx, model.NewSampler(m, model.SamplerOptions{}), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Letters != 0 || r.Words != 0 || r.Lookup != 0 {
		t.Fatalf("an untrained model scored %s", r)
	}
}

func TestRelationDrillsAnswerFromThePassage(t *testing.T) {
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 300; i++ {
		prompt, answer := drillRelation(rng)
		v := strings.TrimSuffix(strings.TrimPrefix(answer, "<answer>"), "</answer>")
		passage, q, ok := strings.Cut(prompt, "\nQuestion: ")
		if !ok || !strings.Contains(passage, v) || v == "" {
			t.Fatalf("drill %d: answer %q not in the passage:\n%s", i, v, prompt)
		}
		seen[strings.Fields(q)[0]+" "+strings.Fields(q)[1]] = true
	}
	if len(seen) < 8 {
		t.Fatalf("only %d question forms in 300 drills: %v", len(seen), seen)
	}
	ds := drillSequences(rand.New(rand.NewPCG(1, 1)), Mix{Drills: 30, DrillRelations: true})
	if len(ds) != 30 {
		t.Fatalf("%d drills", len(ds))
	}
}
