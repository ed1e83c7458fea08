package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"whale/core/chat"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/policy"
	"whale/core/remote"
	"whale/harnesses"
)

// A fleet samples a LoRA run's rollouts — weight phases included — on a
// pool of vLLM servers while whale trains the adapters here. Before a
// sampling, when the weights moved (by SyncEvery steps at least, within a
// weight phase; at once before anything else samples), whale exports the
// adapters as a PEFT folder into the shared Adapters folder, has every
// server load it under a name of its own (vLLM's runtime LoRA API),
// unloads the previous one and asks for the new name as the model.
//
// Training needs token ids: whale fits and renders each prompt itself and
// sends it as token ids to the completions endpoint (so the servers
// continue exactly the prompt whale trains on, whatever their chat
// template, and text that is not UTF-8 survives), takes the completion's
// ids from the server when it gives them (vLLM's return_token_ids, or
// logprobs tokens as "token_id:N"), and otherwise encodes the text with
// the run's tokenizer, keeping it only if the ids decode back to the
// same text.
//
// A sample is refused — served, scored, but never trained on, and
// counted — when its reply names another adapter than the one asked for
// (a stale adapter), when the server's ids decode to other text than it
// sent (another tokenizer), when the prompt ids the server reports are
// not those sent, or when re-encoded text does not round-trip. Under
// SyncEvery N > 1 a weight step samples the adapter exported up to N−1
// steps before: that adapter is the one asked for, so its samples are
// trained on as they are (off-policy by up to N−1 steps, which RSFT
// imitates and GRPO's ratio to the sampling log-probabilities weights);
// N = 1 keeps every sample on-policy.
type fleet struct {
	pool *remote.Pool
	tmpl *chat.Template
	m    *model.Model
	run  string
	cfg  PolicyServer
	// current says the weights' hash and step now.
	current func() (weights string, step int)

	mu sync.Mutex
	// lag is how many steps behind the weights the served adapter may
	// be before the next sampling exports a new one.
	lag int
	// loaded is the adapter the servers serve (its name, and the
	// weights and step it was exported at); "" before the first export.
	loaded, loadedWeights string
	loadedStep            int
	// refused holds the keys of the requests whose samples are refused,
	// and why, since the last take.
	refused map[string]string
	counts  FleetCounts
}

// FleetCounts are a fleet's figures over a process's life.
type FleetCounts struct {
	// Adapter is the adapter served now; Loads how many were loaded.
	Adapter string `json:"adapter,omitempty"`
	Loads   int    `json:"loads"`
	// Stale, Tokens and Prompt count refused samples: served by another
	// adapter than asked for; ids that did not decode to the reply's
	// text (or text that did not round-trip through the tokenizer); a
	// prompt the server rendered unlike whale.
	Stale  int `json:"stale,omitempty"`
	Tokens int `json:"tokens,omitempty"`
	Prompt int `json:"prompt,omitempty"`
	// Retokenized counts samples whose ids whale made from the text.
	Retokenized int `json:"retokenized,omitempty"`
}

// FleetStatus is what screens show of a run's servers: each endpoint's
// figures and, for a fleet, its adapter and counts.
type FleetStatus struct {
	Endpoints []remote.EndpointStats `json:"endpoints"`
	Fleet     *FleetCounts           `json:"fleet,omitempty"`
}

// Lines are the status as a few short lines for a screen.
func (s FleetStatus) Lines() []string {
	var out []string
	if f := s.Fleet; f != nil {
		line := fmt.Sprintf("fleet: adapter %s (%d loaded)", orDash(f.Adapter), f.Loads)
		if f.Stale+f.Tokens+f.Prompt > 0 {
			line += fmt.Sprintf(", refused %d stale, %d token, %d prompt samples", f.Stale, f.Tokens, f.Prompt)
		}
		if f.Retokenized > 0 {
			line += fmt.Sprintf(", %d re-tokenized", f.Retokenized)
		}
		out = append(out, line)
	}
	for _, e := range s.Endpoints {
		state := ""
		if e.Out {
			state = ", OUT"
		}
		if e.TakenOut > 0 {
			state += fmt.Sprintf(", taken out %d×", e.TakenOut)
		}
		out = append(out, fmt.Sprintf("server %s: %d calls, %.0f ms mean, %d errors, %d in flight%s", e.URL, e.Calls, e.LatencyMS, e.Errors, e.InFlight, state))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

var _ policy.Policy = (*fleet)(nil)

// newFleet is the fleet of cfg's servers serving adapters of m.
func newFleet(pool *remote.Pool, tmpl *chat.Template, m *model.Model, run string, cfg PolicyServer, current func() (string, int)) (*fleet, error) {
	if m.LoRA() == nil {
		return nil, errors.New("engine: a fleet serves LoRA adapters, and the model has none")
	}
	if err := os.MkdirAll(cfg.Adapters, 0o755); err != nil {
		return nil, fmt.Errorf("engine: the fleet's adapters folder: %w", err)
	}
	return &fleet{pool: pool, tmpl: tmpl, m: m, run: run, cfg: cfg, current: current, refused: map[string]string{}}, nil
}

// Generate fits and renders each chat as the local policy would, has the
// servers continue the rendered prompts (as token ids) under the current
// adapter, and makes each reply a completion with whale's token ids (see
// fleet).
func (f *fleet) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	if err := f.sync(ctx); err != nil {
		return nil, err
	}
	out := make([]policy.Completion, len(reqs))
	prompts := make([]chat.Prompt, len(reqs))
	inner := make([]remote.TokenRequest, 0, len(reqs))
	at := make([]int, 0, len(reqs))
	stops := f.tmpl.Stops()
	for i, r := range reqs {
		p, err := f.tmpl.Fit(r.Messages, r.ContextTokens)
		if errors.Is(err, chat.ErrOverBudget) {
			out[i] = policy.Completion{Finish: policy.FinishPrompt, Error: err.Error()}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("engine: fleet: request %d (key %q): %w", i, r.Key, err)
		}
		prompts[i] = p
		inner = append(inner, remote.TokenRequest{Key: r.Key, Prompt: p.IDs, MaxNewTokens: r.MaxNewTokens, Temperature: r.Temperature,
			TopK: r.TopK, TopP: r.TopP, Seed: r.Seed, Stop: stops})
		at = append(at, i)
	}
	if len(inner) == 0 {
		return out, nil
	}
	f.mu.Lock()
	asked := f.loaded
	f.mu.Unlock()
	reps, err := f.pool.Complete(ctx, asked, inner)
	if err != nil {
		return nil, err
	}
	for k, rep := range reps {
		i := at[k]
		c, why := f.complete(rep, prompts[i], asked)
		out[i] = c
		if why != "" {
			f.refuse(reqs[i].Key, why)
		}
	}
	return out, nil
}

// complete makes rep, a reply to the fitted prompt p under adapter
// asked, the completion the local model would report, and says why its
// sample must not be trained on ("" when it may be).
func (f *fleet) complete(rep remote.Reply, p chat.Prompt, asked string) (policy.Completion, string) {
	c := rep.Completion
	why := ""
	if rep.Model != "" && rep.Model != asked {
		why = "stale"
	}
	if len(rep.PromptIDs) > 0 && !slices.Equal(rep.PromptIDs, p.IDs) && why == "" {
		why = "prompt"
	}
	stops := f.tmpl.Stops()
	if len(c.Tokens) > 0 {
		if c.Finish == policy.FinishStop && !slices.Contains(stops, c.Tokens[len(c.Tokens)-1]) {
			// A server that leaves the end-of-turn token out of the ids
			// it reports: whale's model wrote it.
			c.Tokens = append(slices.Clone(c.Tokens), f.tmpl.Stop())
			if len(c.LogProbs) == len(c.Tokens)-1 {
				c.LogProbs = append(slices.Clone(c.LogProbs), 0)
			}
		}
		// The ids must say what the text says (else the server's
		// tokenizer is not the run's); the text is then whale's own
		// decoding, as the local policy's is, bytes a server could not
		// send as JSON included.
		text := f.tmpl.Text(c.Tokens)
		if jsonText(text) != jsonText(c.Text) && why == "" {
			why = "tokens"
		}
		c.Text = text
	} else {
		tok := f.tmpl.Tokenizer()
		ids := tok.Encode(c.Text)
		f.mu.Lock()
		f.counts.Retokenized++
		f.mu.Unlock()
		if tok.Decode(ids) != c.Text {
			if why == "" {
				why = "tokens"
			}
		}
		if c.Finish == policy.FinishStop {
			ids = append(ids, f.tmpl.Stop())
		}
		if len(c.LogProbs) != len(ids) {
			c.LogProbs = make([]float32, len(ids))
		}
		c.Tokens = ids
	}
	if len(c.LogProbs) != len(c.Tokens) {
		c.LogProbs = make([]float32, len(c.Tokens))
	}
	c.Prompt, c.Dropped, c.Cut, c.Entropy = p.IDs, p.Dropped, p.Cut, 0
	return c, why
}

func (f *fleet) refuse(key, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refused[key] = why
	switch why {
	case "stale":
		f.counts.Stale++
	case "prompt":
		f.counts.Prompt++
	default:
		f.counts.Tokens++
	}
}

// takeRefused returns the refused keys since the last take and forgets
// them.
func (f *fleet) takeRefused() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.refused
	f.refused = map[string]string{}
	return out
}

// setLag sets how many steps behind the weights the served adapter may
// be at the next sampling.
func (f *fleet) setLag(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lag = n
}

// sync exports and loads the adapters when the servers' are not the
// weights' now (and, within the lag, older by more than it).
func (f *fleet) sync(ctx context.Context) error {
	weights, step := f.current()
	f.mu.Lock()
	fresh := f.loaded != "" && (f.loadedWeights == weights || step-f.loadedStep <= f.lag)
	prev := f.loaded
	f.mu.Unlock()
	if fresh {
		return nil
	}
	name := fmt.Sprintf("%s-s%d-%s", adapterSafe(f.run), step, ShortHash(weights))
	dir := filepath.Join(f.cfg.Adapters, name)
	meta := map[string]string{"whale.run": f.run, "whale.step": fmt.Sprint(step), "whale.weights": weights}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("engine: fleet: export adapter %s: %w", name, err)
	}
	if _, err := ckpt.SaveAdapters(dir, f.m, ckpt.F32, f.cfg.Model, meta); err != nil {
		return fmt.Errorf("engine: fleet: export adapter %s: %w", name, err)
	}
	served := f.cfg.ServerAdapters
	if served == "" {
		served = f.cfg.Adapters
	}
	if err := f.pool.LoadAdapter(ctx, name, filepath.Join(served, name)); err != nil {
		return fmt.Errorf("engine: fleet: %w", err)
	}
	f.pool.SetModel(name)
	f.mu.Lock()
	f.loaded, f.loadedWeights, f.loadedStep = name, weights, step
	f.counts.Loads++
	f.counts.Adapter = name
	f.mu.Unlock()
	if prev != "" && prev != name {
		// Best effort: a server that keeps an old adapter serves the new
		// one all the same, and a call never asks for the old name again.
		_ = f.pool.UnloadAdapter(ctx, prev)
		os.RemoveAll(filepath.Join(f.cfg.Adapters, prev))
	}
	return nil
}

// jsonText is s as a reply can carry it: every run of bytes that is not
// UTF-8 one replacement character (servers replace invalid bytes per byte
// or per run).
func jsonText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for strings.Contains(s, "\uFFFD\uFFFD") {
		s = strings.ReplaceAll(s, "\uFFFD\uFFFD", "\uFFFD")
	}
	return s
}

// adapterSafe is s with what an adapter name should not hold replaced.
func adapterSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}

// status is what screens show of the fleet.
func (f *fleet) status() FleetStatus {
	f.mu.Lock()
	c := f.counts
	f.mu.Unlock()
	return FleetStatus{Endpoints: f.pool.Stats(), Fleet: &c}
}

// serverStatus is the run's servers' figures, nil for a local policy.
func (e *Engine) serverStatus() *FleetStatus {
	if e.fleet != nil {
		s := e.fleet.status()
		return &s
	}
	if p, ok := e.pol.(*remote.Pool); ok {
		return &FleetStatus{Endpoints: p.Stats()}
	}
	return nil
}

// fleetKeep drops from a weight step's rollouts those with a refused
// sample (fleet): they were paid for and scored, but are not trained on.
func (e *Engine) fleetKeep(ts []harnesses.Trajectory, hs []string) ([]harnesses.Trajectory, []string, error) {
	if e.fleet == nil {
		return ts, hs, nil
	}
	refused := e.fleet.takeRefused()
	if len(refused) == 0 {
		return ts, hs, nil
	}
	var kt []harnesses.Trajectory
	var kh []string
	for i, t := range ts {
		bad := false
		for _, c := range t.Calls {
			if _, ok := refused[c.Key]; ok {
				bad = true
				break
			}
		}
		if !bad {
			kt, kh = append(kt, t), append(kh, hs[i])
		}
	}
	if len(kt) == 0 {
		return nil, nil, fmt.Errorf("engine: fleet: every one of the step's %d samples was refused (%s): check that the servers serve this run's base model and tokenizer and load its adapters", len(ts), e.fleet.status().Lines()[0])
	}
	return kt, kh, nil
}

// fleetLag sets the fleet's allowed lag (no-op without one).
func (e *Engine) fleetLag(n int) {
	if e.fleet != nil {
		e.fleet.setLag(n)
	}
}

// fleetAdapter is the adapter the fleet serves ("" without one).
func (e *Engine) fleetAdapter() string {
	if e.fleet == nil {
		return ""
	}
	e.fleet.mu.Lock()
	defer e.fleet.mu.Unlock()
	return e.fleet.loaded
}

// syncEvery is the weight steps one exported adapter serves.
func (e *Engine) syncEvery() int {
	if s := e.Cfg.PolicyServer; s != nil && s.SyncEvery > 0 {
		return s.SyncEvery
	}
	return 1
}
