package pretrain

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync"

	"whale/core/chat"
	"whale/core/policy"
	"whale/core/tokenizer"
	"whale/data"
	dmath "whale/data/math"
	"whale/data/searchqa"
	"whale/harnesses"
)

// demonstrator is the scripted "teacher" whose completions become the
// corpus. It runs under harnesses.Run like the oracle policy, so every
// demonstration is a real prompt of a real harness variant followed by a
// completion that variant parses. Unlike the oracle it shows work (math
// steps, searches for the bridge entity of a two-hop question), and it is
// deliberately imperfect in realistic ways (arithmetic slips, wrong moves,
// format slips followed by a repair), drawn from a stream per request key
// so that the corpus is a function of the seed only. It writes text, which
// chat.Tokenize turns into the model's tokens; it reads its prompt as the
// model does, the fitted chat rendered by tmpl and decoded.
type demonstrator struct {
	dom  data.Domain
	tmpl *chat.Template
	seed uint64
	mix  Mix
	docs map[string]searchqa.Doc

	mu    sync.Mutex
	infos map[string]harnesses.RequestInfo
}

func newDemonstrator(dom data.Domain, tmpl *chat.Template, seed uint64, mix Mix) *demonstrator {
	d := &demonstrator{dom: dom, tmpl: tmpl, seed: seed, mix: mix, infos: map[string]harnesses.RequestInfo{}}
	if sq, ok := dom.(*searchqa.Domain); ok {
		d.docs = map[string]searchqa.Doc{}
		for _, doc := range sq.Corpus() {
			d.docs[doc.ID] = doc
		}
	}
	return d
}

// ObserveRequest implements harnesses.RequestObserver.
func (d *demonstrator) ObserveRequest(info harnesses.RequestInfo) {
	d.mu.Lock()
	d.infos[info.Key] = info
	d.mu.Unlock()
}

// Generate writes one demonstration completion per request.
func (d *demonstrator) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		d.mu.Lock()
		info, ok := d.infos[r.Key]
		delete(d.infos, r.Key)
		d.mu.Unlock()
		if !ok {
			return nil, fmt.Errorf("pretrain: demonstrator: no episode seen for request %q", r.Key)
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%d/%s", d.seed, r.Key)
		rng := rand.New(rand.NewPCG(d.seed, h.Sum64()))
		ids, err := d.tmpl.Render(r.Messages)
		if err != nil {
			return nil, fmt.Errorf("pretrain: demonstrator: %w", err)
		}
		text, err := d.reply(rng, info, d.tmpl.Tokenizer().Decode(ids))
		if err != nil {
			return nil, err
		}
		out[i] = policy.Completion{Text: text, Finish: policy.FinishStop}
	}
	return out, nil
}

// lastUser returns the content of the prompt's last user or tool turn.
func lastTurn(prompt string) string {
	i := strings.LastIndex(prompt, tokenizer.ImStart+"user\n")
	j := strings.LastIndex(prompt, tokenizer.ImStart+"tool\n")
	i = max(i, j)
	if i < 0 {
		return ""
	}
	s := prompt[i:]
	s = s[strings.IndexByte(s, '\n')+1:]
	if k := strings.Index(s, tokenizer.ImEnd); k >= 0 {
		s = s[:k]
	}
	return s
}

func (d *demonstrator) reply(rng *rand.Rand, info harnesses.RequestInfo, prompt string) (string, error) {
	switch d.dom.Name() {
	case dmath.Name:
		return d.mathReply(rng, info, prompt)
	case searchqa.Name:
		return d.searchReply(rng, info, prompt)
	default:
		return d.chessReply(rng, info, prompt)
	}
}

// --- math ----------------------------------------------------------------

// mathReply writes the worked steps inline (the model's own arithmetic is
// the lever that matters), sometimes handing the last operation to calc.
// A retry or a tool result is answered with the final number.
func (d *demonstrator) mathReply(rng *rand.Rand, info harnesses.RequestInfo, prompt string) (string, error) {
	t := info.Task
	steps, err := dmath.Solution(t)
	if err != nil {
		return "", fmt.Errorf("pretrain: demonstrator: %w", err)
	}
	if len(steps) == 0 {
		return "", fmt.Errorf("pretrain: demonstrator: math task %s has no steps", t.ID)
	}
	results, _ := info.Obs.Fields["tool_results"].([]string)
	if len(results) > 0 || info.Require == data.ActAnswer {
		// After a calc call: read the result off the last line.
		ans := t.Answer
		if len(results) > 0 {
			last := results[len(results)-1]
			if k := strings.LastIndex(last, "= "); k >= 0 {
				ans = strings.TrimSpace(last[k+2:])
			}
		}
		return pick(rng, "<answer>"+ans+"</answer>", "The answer is "+ans+".\n<answer>"+ans+"</answer>"), nil
	}
	if strings.Contains(lastTurn(prompt), "could not") || strings.Contains(lastTurn(prompt), "not a valid") || strings.Contains(lastTurn(prompt), "not usable") {
		return "<answer>" + t.Answer + "</answer>", nil
	}
	values := make([]string, len(steps))
	for i, s := range steps {
		values[i] = s.Value
	}
	final := t.Answer
	if rng.Float64() < d.mix.MathSlip {
		// An arithmetic slip in one step, carried to the answer only when
		// it is the last step: a realistic wrong demonstration.
		k := rng.IntN(len(steps))
		values[k] = slip(rng, values[k])
		if k == len(steps)-1 {
			final = values[k]
		}
	}
	// A harness that asks for a calc call first (it checks the model's
	// own arithmetic) gets the worked steps ending in one.
	useCalc := (info.Require == data.ActTool || rng.Float64() < d.mix.MathCalc) && info.Require != data.ActAnswer && contains(info.Tools, "calc")
	style := rng.IntN(3)
	var b strings.Builder
	for i, s := range steps {
		if useCalc && i == len(steps)-1 {
			fmt.Fprintf(&b, "<tool>calc: %s</tool>", s.Expr)
			return b.String(), nil
		}
		switch style {
		case 0:
			fmt.Fprintf(&b, "%s = %s\n", s.Expr, values[i])
		case 1:
			fmt.Fprintf(&b, "%s: %s = %s\n", capitalize(s.Text), s.Expr, values[i])
		default:
			fmt.Fprintf(&b, "Step %d: %s = %s\n", i+1, s.Expr, values[i])
		}
	}
	fmt.Fprintf(&b, "<answer>%s</answer>", final)
	return b.String(), nil
}

// slip returns a plausible wrong value near v: a digit off by one or a
// dropped decimal place.
func slip(rng *rand.Rand, v string) string {
	r, ok := new(big.Rat).SetString(v)
	if !ok {
		return v + "1"
	}
	switch rng.IntN(3) {
	case 0:
		r.Add(r, big.NewRat(int64(1+rng.IntN(9)), 1))
	case 1:
		r.Sub(r, big.NewRat(int64(1+rng.IntN(9)), 1))
	default:
		r.Mul(r, big.NewRat(10, 1))
	}
	if r.Sign() <= 0 {
		r.Neg(r)
		r.Add(r, big.NewRat(1, 1))
	}
	return dmath.Format(r)
}

// --- searchqa ------------------------------------------------------------

// searchReply answers when a shown passage holds the answer, otherwise
// searches: the question first, then the bridge entity of a two-hop
// question. With no turns left it guesses a name it has seen.
func (d *demonstrator) searchReply(rng *rand.Rand, info harnesses.RequestInfo, prompt string) (string, error) {
	t := info.Task
	// What the harness showed after the first user message.
	shown := prompt
	if i := strings.Index(prompt, tokenizer.ImStart+"user\n"); i >= 0 {
		shown = prompt[i:]
	}
	if q := strings.Index(shown, t.Problem); q >= 0 {
		shown = shown[:q] + shown[q+len(t.Problem):]
	}
	visible := ""
	for _, a := range append([]string{t.Answer}, t.Aliases...) {
		if a != "" && strings.Contains(shown, a) {
			visible = a
			break
		}
	}
	queries, _ := info.Obs.Fields["queries"].([]string)
	mustSearch := info.Require == data.ActTool
	if visible != "" && !mustSearch {
		return d.searchAnswer(rng, visible), nil
	}
	// The prompt does not say how many turns are left, so the
	// demonstration searches whenever the answer is not in sight; a
	// harness with a small turn budget then ends the rollout at its turn
	// limit, which is the point: such a harness wastes this habit.
	if info.Require != data.ActAnswer {
		return "<tool>search: " + d.nextQuery(t, queries) + "</tool>", nil
	}
	// Made to answer without the answer in sight: a confident guess from
	// what was shown, which is what a weak model does.
	guess := guessName(rng, shown)
	if guess == "" {
		guess = "unknown"
	}
	return d.searchAnswer(rng, guess), nil
}

func (d *demonstrator) searchAnswer(rng *rand.Rand, ans string) string {
	switch x := rng.Float64(); {
	case x < 0.75:
		return "<answer>" + ans + "</answer>"
	case x < 0.9:
		return "The passage says it: " + ans + ".\n<answer>" + ans + "</answer>"
	default:
		return "Answer: " + ans + "\n<answer>" + ans + "</answer>"
	}
}

// nextQuery is the question for the first search; for a two-hop question
// after that, the title of the document the answer is in (the bridge).
func (d *demonstrator) nextQuery(t data.Task, queries []string) string {
	q := strings.TrimSpace(t.Problem)
	ids := strings.Fields(t.Hidden[searchqa.HiddenGoldDocs])
	if len(queries) == 0 || len(ids) == 0 {
		return q
	}
	doc, ok := d.docs[ids[len(ids)-1]]
	if !ok {
		return q
	}
	if len(queries) >= 2 && len(ids) >= 2 {
		if first, ok := d.docs[ids[0]]; ok {
			return first.Title
		}
	}
	return doc.Title
}

// guessName picks a capitalised word from the shown text.
func guessName(rng *rand.Rand, shown string) string {
	var names []string
	for _, w := range strings.Fields(shown) {
		w = strings.Trim(w, ".,;:()[]\"'")
		if len(w) > 3 && w[0] >= 'A' && w[0] <= 'Z' && !strings.ContainsAny(w, "<>|") {
			names = append(names, w)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return names[rng.IntN(len(names))]
}

// --- chess ---------------------------------------------------------------

// chessReply writes the board-reading procedure of chessProcedure and
// plays its move, with some realistic noise: a legal but wrong move, a
// bare move (a format slip the retry repairs), or a first tag corrected by
// a second. It never consults the task's listed line: the move follows
// from the observation.
func (d *demonstrator) chessReply(rng *rand.Rand, info harnesses.RequestInfo, prompt string) (string, error) {
	steps, move, err := chessProcedure(info.Obs)
	if err != nil {
		return "", err
	}
	legal, _ := info.Obs.Fields["legal_moves"].([]string)
	other := move
	if len(legal) > 1 {
		for other == move {
			other = legal[rng.IntN(len(legal))]
		}
	}
	last := lastTurn(prompt)
	if strings.Contains(last, "could not read") || strings.Contains(last, "no <move>") {
		return "<move>" + move + "</move>", nil
	}
	switch x := rng.Float64(); {
	case x < d.mix.ChessWrong:
		return steps + "<move>" + other + "</move>", nil
	case x < d.mix.ChessWrong+d.mix.ChessBare:
		return steps + move, nil
	case x < d.mix.ChessWrong+d.mix.ChessBare+d.mix.ChessCorrect:
		return "<move>" + other + "</move> No: " + steps + "<move>" + move + "</move>", nil
	default:
		return steps + "<move>" + move + "</move>", nil
	}
}

func pick(rng *rand.Rand, xs ...string) string { return xs[rng.IntN(len(xs))] }

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
