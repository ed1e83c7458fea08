package pretrain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"whale/core/model"
	"whale/core/tokenizer"
)

// ProbeResult is how often a model, decoding greedily, copies exactly
// what it should from its context, on three seeded kinds of probe.
type ProbeResult struct {
	// Letters: a bare run of 20–120 random letters said again after the
	// separator (copying by content; a fixed length can be copied by
	// position, see Mix.DrillRawVary).
	Letters float64 `json:"letters"`
	// Words: "Repeat exactly:" a list of made-up words and numbers, in a
	// chat turn, answered in <answer> tags.
	Words float64 `json:"words"`
	// Lookup: facts as sentences, then a question about one of them.
	Lookup float64 `json:"lookup"`
	N      int     `json:"n"` // probes of each kind
}

func (r ProbeResult) String() string {
	return fmt.Sprintf("copy letters %.2f, words %.2f, lookups %.2f (n %d each, greedy)", r.Letters, r.Words, r.Lookup, r.N)
}

// Generator samples token prompts: a model.Sampler. The probes ask for
// tokens, not chats, since the letter probe is a bare run of bytes, no
// chat at all, and they are the byte model's only.
type Generator interface {
	Generate(ctx context.Context, reqs []model.Request) ([]model.Completion, error)
}

// Probe runs n probes of each kind, drawn from seed, through g (a
// model.Sampler for a model; requests are greedy). The probes use made-up
// strings only, like the drills, never task data.
func Probe(ctx context.Context, g Generator, n int, seed uint64) (ProbeResult, error) {
	tok := tokenizer.NewBytes()
	rng := rand.New(rand.NewPCG(seed, 0x9b0be))
	var reqs []model.Request
	var want []string
	for kind := 0; kind < 3; kind++ {
		for i := 0; i < n; i++ {
			var prompt []int32
			var answer string
			switch kind {
			case 0:
				s := rawCopy(rng, 20+rng.IntN(101))
				half := (len(s.Tokens) - 2) / 2
				prompt, answer = s.Tokens[:half+2], tok.Decode(s.Tokens[half+2:])
			default:
				var p string
				if kind == 1 {
					p, answer = drillRepeatWords(rng)
				} else {
					p, answer = drillLookup(rng)
				}
				ids, err := tokenizer.EncodeChat(tok, []tokenizer.Message{{Role: "user", Content: p}}, true)
				if err != nil {
					return ProbeResult{}, err
				}
				prompt = ids
			}
			reqs = append(reqs, model.Request{Key: fmt.Sprintf("probe/%d/%d", kind, i), Prompt: prompt,
				MaxNewTokens: len(tok.Encode(answer)) + 2, Stop: []int32{tokenizer.BytesImEnd}})
			want = append(want, answer)
		}
	}
	cs, err := g.Generate(ctx, reqs)
	if err != nil {
		return ProbeResult{}, fmt.Errorf("pretrain: probe: %w", err)
	}
	var hits [3]int
	for i, c := range cs {
		if strings.HasPrefix(tok.Decode(c.Tokens), want[i]) {
			hits[i/n]++
		}
	}
	f := func(h int) float64 { return float64(h) / float64(max(1, n)) }
	return ProbeResult{Letters: f(hits[0]), Words: f(hits[1]), Lookup: f(hits[2]), N: n}, nil
}

// drillRepeatWords is a "Repeat exactly" drill over made-up words and
// numbers of 15–60 bytes.
func drillRepeatWords(rng *rand.Rand) (string, string) {
	s := drillWords(rng, 15+rng.IntN(46))
	return "Repeat exactly: " + s, "<answer>" + s + "</answer>"
}
