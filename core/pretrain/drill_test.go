package pretrain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"whale/core/tokenizer"
)

func TestDrillsAnswerFromTheirPrompt(t *testing.T) {
	tok := tokenizer.Bytes{}
	for i, s := range drillSequences(rand.New(rand.NewPCG(1, 2)), 60, 0.3, false, false) {
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
