package harnesses

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"whale/core/policy"
	"whale/data"
)

// Null is a content-blind scripted policy for the anti-cheat audit: it
// answers without reading the problem's meaning, by a random pick from
// what the harness shows it (the user and tool messages of its chat, as
// fitted to CONTEXT_TOKENS when chat.Tokenize fits it as the model's
// would be).
// Per domain: searchqa — a random span of one to four words (shorter ones
// likelier: see spanWords) of the shown
// text; math — a random number from the shown text; chess — a random move
// among those the shown text lists (the episode's legal moves when it
// lists none). A harness that lifts such a policy well above h0 does part
// of the solving itself (it narrows the choice to the answer), which a
// harness may not do. Picks depend only on each request's Seed and Key.
type Null struct {
	dom string

	infos map[string]RequestInfo
}

// NewNull returns the null policy of a domain.
func NewNull(dom data.Domain) (*Null, error) {
	switch dom.Name() {
	case "searchqa", "math", "chess":
	default:
		return nil, fmt.Errorf("harnesses: no null policy for domain %q (have searchqa, math, chess)", dom.Name())
	}
	return &Null{dom: dom.Name(), infos: map[string]RequestInfo{}}, nil
}

// ObserveRequest keeps the episode's legal moves for chess's fallback.
func (p *Null) ObserveRequest(info RequestInfo) { p.infos[info.Key] = info }

var (
	nullNumber = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
	nullMove   = regexp.MustCompile(`\b[a-h][1-8][a-h][1-8][qrbn]?\b`)
	nullWord   = regexp.MustCompile(`[\pL\pN][\pL\pN'\-]*`)
)

// spanWords is the searchqa null policy's span length distribution: short
// spans first, as answers are (a name, a year, a city).
var spanWords = []int{1, 1, 1, 1, 2, 2, 2, 3, 4, 4}

// Generate answers each request with a content-blind pick.
func (p *Null) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		rng := requestRNG("null/", r)
		shown := shown(r.Messages)
		var reply string
		switch p.dom {
		case "searchqa":
			words := nullWord.FindAllString(shown, -1)
			if len(words) > 0 {
				n := spanWords[rng.IntN(len(spanWords))]
				at := rng.IntN(len(words))
				reply = "<answer>" + strings.Join(words[at:min(at+n, len(words))], " ") + "</answer>"
			}
		case "math":
			if nums := nullNumber.FindAllString(shown, -1); len(nums) > 0 {
				reply = "<answer>" + nums[rng.IntN(len(nums))] + "</answer>"
			}
		case "chess":
			moves := nullMove.FindAllString(shown, -1)
			if len(moves) == 0 {
				moves, _ = p.infos[r.Key].Obs.Fields["legal_moves"].([]string)
			}
			if len(moves) > 0 {
				reply = "<move>" + moves[rng.IntN(len(moves))] + "</move>"
			}
		}
		delete(p.infos, r.Key)
		out[i] = policy.Completion{Text: reply, Finish: policy.FinishStop}
	}
	return out, nil
}

// shown is the user and tool messages of a chat, each ended by a
// newline: what the harness showed, without its system prompt
// (instructions and examples) and without the policy's own earlier
// replies.
func shown(msgs []policy.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == "user" || m.Role == "tool" {
			b.WriteString(m.Content)
			b.WriteString("\n")
		}
	}
	return b.String()
}
