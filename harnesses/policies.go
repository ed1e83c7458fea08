package harnesses

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"

	"whale/core/policy"
	"whale/data"
)

// Policies for checking harnesses and environments: an oracle that knows
// the gold action, a random babbler, and a mix of the two. They implement
// policy.Policy like the model does, but reply with text alone: the
// harness runtime needs nothing else. Where their replies are trained on,
// chat.Tokenize gives them the tokens the model would have seen and
// written.

// FormatAction renders an action in the format the built-in harnesses
// parse (see lib/README.md): <answer>…</answer>, <move>…</move> or
// <tool>name: args</tool>.
func FormatAction(a data.Action) string {
	switch a.Kind {
	case data.ActAnswer:
		return "<answer>" + a.Text + "</answer>"
	case data.ActMove:
		return "<move>" + a.Text + "</move>"
	case data.ActTool:
		return "<tool>" + a.Tool + ": " + a.Args + "</tool>"
	}
	return ""
}

// Oracle answers every request with the domain's gold action for the
// episode behind it, in the built-in format. It needs the runtime's
// request hook (it implements RequestObserver), so it only works under
// Run.
type Oracle struct {
	dom data.Domain

	mu    sync.Mutex
	infos map[string]RequestInfo
}

// NewOracle returns an oracle policy for dom.
func NewOracle(dom data.Domain) *Oracle {
	return &Oracle{dom: dom, infos: map[string]RequestInfo{}}
}

// ObserveRequest records the episode behind a request key.
func (o *Oracle) ObserveRequest(info RequestInfo) {
	o.mu.Lock()
	o.infos[info.Key] = info
	o.mu.Unlock()
}

// Generate answers each request with the gold action. When the harness
// demands a tool call, the oracle calls the first offered tool with the
// visible question (or the observation text).
func (o *Oracle) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		o.mu.Lock()
		info, ok := o.infos[r.Key]
		delete(o.infos, r.Key)
		o.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("harnesses: oracle: no episode seen for request %q (the oracle runs only under harnesses.Run)", r.Key)
		}
		var act data.Action
		if info.Require == data.ActTool && len(info.Tools) > 0 {
			q, _ := info.Obs.Fields["question"].(string)
			if q == "" {
				q = info.Obs.Text
			}
			act = data.Action{Kind: data.ActTool, Tool: info.Tools[0], Args: q}
		} else {
			var err error
			act, err = o.dom.GoldAction(info.Task, info.Obs)
			if err != nil {
				return nil, fmt.Errorf("harnesses: oracle: gold action of task %s: %w", info.Task.ID, err)
			}
		}
		out[i] = policy.Completion{Text: FormatAction(act), Finish: policy.FinishStop}
	}
	return out, nil
}

// Random emits random text mixing letters, digits, punctuation and the
// tags the built-in harnesses parse, of 1 to about MaxNewTokens + 16 bytes
// (so that some replies are cut at MaxNewTokens once tokenized). Each
// request's text depends only on its Seed and Key.
type Random struct{}

// NewRandom returns a random policy.
func NewRandom() *Random { return &Random{} }

var randomPieces = []string{"<answer>", "</answer>", "<move>", "</move>", "<tool>", "</tool>", "search:", "calc:", "[", "]", "\n", " ", " ", " ", ".", ",", "?", "!", ":", "-", "+", "=", "(", ")"}

// requestRNG is one request's random source: its seed, and a hash of tag,
// the seed and its key (a tag per policy, so two policies never share
// draws).
func requestRNG(tag string, r policy.Request) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s%d/%s", tag, r.Seed, r.Key)
	return rand.New(rand.NewPCG(r.Seed, h.Sum64()))
}

// Generate returns one random completion per request.
func (p *Random) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		rng := requestRNG("", r)
		n := 1 + rng.IntN(max(r.MaxNewTokens, 1)+16)
		var b strings.Builder
		for b.Len() < n {
			switch rng.IntN(4) {
			case 0:
				b.WriteString(randomPieces[rng.IntN(len(randomPieces))])
			case 1:
				for k := 1 + rng.IntN(4); k > 0; k-- {
					b.WriteByte(byte('0' + rng.IntN(10)))
				}
			default:
				for k := 1 + rng.IntN(7); k > 0; k-- {
					b.WriteByte(byte('a' + rng.IntN(26)))
				}
			}
		}
		out[i] = policy.Completion{Text: b.String(), Finish: policy.FinishStop}
	}
	return out, nil
}

// Mixed answers like the oracle for a share of the request keys and like
// the random policy for the rest, deterministically by key: rollouts that
// are both kept and rejected, for tests of training and search loops.
type Mixed struct {
	oracle *Oracle
	random *Random
	// every is the oracle's share as 1 in every keys.
	every uint32
}

// NewMixed returns a policy that acts as the oracle for about one in
// every request keys (every ≥ 1).
func NewMixed(dom data.Domain, every int) *Mixed {
	return &Mixed{oracle: NewOracle(dom), random: NewRandom(), every: uint32(max(1, every))}
}

func (p *Mixed) ObserveRequest(info RequestInfo) { p.oracle.ObserveRequest(info) }

func (p *Mixed) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		h := fnv.New32a()
		h.Write([]byte(r.Key))
		var pol policy.Policy = p.random
		if h.Sum32()%p.every == 0 {
			pol = p.oracle
		}
		c, err := pol.Generate(ctx, []policy.Request{r})
		if err != nil {
			return nil, err
		}
		out[i] = c[0]
	}
	return out, nil
}
