package pretrain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"whale/core/tokenizer"
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
