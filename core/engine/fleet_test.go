package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"whale/core/chat"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/policy"
	"whale/core/tokenizer"
	"whale/harnesses"
	"whale/kernels"
)

// vllm is a fake vLLM replica with runtime LoRA updating: its base is
// whale's own test model (the weights every test run starts from), an
// adapter it is told to load is read from the PEFT folder the engine
// exported, and a chat is sampled by whale's local policy over the
// adapted model under the call's request_id as the request key and the
// run's seed — so a replica samples exactly what the local policy would.
// It answers with the completion's token ids as vLLM's
// return_tokens_as_token_ids writes them (or, textOnly, with text alone).
type vllm struct {
	t    *testing.T
	srv  *httptest.Server
	lora model.LoRAConfig
	seed uint64

	mu       sync.Mutex
	gpu      sync.Mutex
	adapters map[string]*model.Model
	loads    []string // lora_name of every load
	unloads  []string
	chats    int
	// stale holds request ids whose replies name staleAs as their model
	// (a replica serving an old adapter).
	stale    map[string]bool
	staleAs  string
	textOnly bool
	// crlf makes every reply's text use "\r\n" for "\n".
	crlf bool
}

func newVLLM(t *testing.T, lora model.LoRAConfig, seed uint64) *vllm {
	v := &vllm{t: t, lora: lora, seed: seed, adapters: map[string]*model.Model{}}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *vllm) url() string { return v.srv.URL + "/v1" }

func vllmError(w http.ResponseWriter, status int, msg string) {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg}})
}

func (v *vllm) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models", "/health":
		w.Write([]byte(`{"data":[]}`))
	case "/v1/load_lora_adapter":
		var body struct{ LoraName, LoraPath string }
		json.NewDecoder(r.Body).Decode(&struct {
			Name *string `json:"lora_name"`
			Path *string `json:"lora_path"`
		}{&body.LoraName, &body.LoraPath})
		m, err := model.New(testModel, kernels.NewCPU(), 5)
		if err == nil {
			err = m.EnableLoRA(v.lora, 99)
		}
		if err == nil {
			err = ckpt.LoadAdapters(body.LoraPath, m)
		}
		if err != nil {
			vllmError(w, http.StatusBadRequest, err.Error())
			return
		}
		v.mu.Lock()
		v.adapters[body.LoraName] = m
		v.loads = append(v.loads, body.LoraName)
		v.mu.Unlock()
		fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", body.LoraName)
	case "/v1/unload_lora_adapter":
		var body struct {
			Name string `json:"lora_name"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		v.mu.Lock()
		_, ok := v.adapters[body.Name]
		delete(v.adapters, body.Name)
		v.unloads = append(v.unloads, body.Name)
		v.mu.Unlock()
		if !ok {
			vllmError(w, http.StatusNotFound, "The lora adapter '"+body.Name+"' cannot be found.")
		}
	case "/v1/completions":
		v.complete(w, r)
	default:
		vllmError(w, http.StatusNotFound, "no route "+r.URL.Path)
	}
}

func (v *vllm) complete(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model       string  `json:"model"`
		Prompt      []int32 `json:"prompt"`
		MaxTokens   int     `json:"max_tokens"`
		Temperature float32 `json:"temperature"`
		TopP        float32 `json:"top_p"`
		TopK        int     `json:"top_k"`
		Stop        []int32 `json:"stop_token_ids"`
		RequestID   string  `json:"request_id"`
		AsIDs       bool    `json:"return_tokens_as_token_ids"`
		Logprobs    int     `json:"logprobs"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.RequestID == "" || !body.AsIDs || body.Logprobs != 1 || len(body.Prompt) == 0 {
		vllmError(w, http.StatusBadRequest, fmt.Sprintf("bad request (%v): this fake serves token-id prompts with a request_id and token ids", err))
		return
	}
	v.mu.Lock()
	m, ok := v.adapters[body.Model]
	v.chats++
	chats, served := v.chats, body.Model
	if v.stale[body.RequestID] {
		served = v.staleAs
	}
	if chats > 5000 {
		v.t.Errorf("fake vLLM: more than 5000 calls")
	}
	v.mu.Unlock()
	if !ok {
		vllmError(w, http.StatusNotFound, "The model `"+body.Model+"` does not exist.")
		return
	}
	// One sampling at a time per replica: a model is not safe for two
	// samplers at once (a replica's GPU runs one batch anyway).
	v.gpu.Lock()
	defer v.gpu.Unlock()
	cs, err := model.NewSampler(m, model.SamplerOptions{}).Generate(r.Context(), []model.Request{{Key: body.RequestID, Prompt: body.Prompt, MaxNewTokens: body.MaxTokens,
		Temperature: body.Temperature, TopP: body.TopP, TopK: body.TopK, Stop: body.Stop, Seed: v.seed}})
	if err != nil {
		vllmError(w, http.StatusInternalServerError, err.Error())
		return
	}
	c := cs[0]
	fin := string(c.Finish)
	if c.Finish == policy.FinishContext {
		fin = "length"
	}
	tmpl, _ := chat.NewTemplate(tokenizer.Bytes{})
	text := tmpl.Text(c.Tokens)
	if v.crlf {
		text = strings.ReplaceAll(text, "\n", "\r\n")
	}
	choice := map[string]any{"index": 0, "text": text, "finish_reason": fin, "prompt_token_ids": body.Prompt}
	if !v.textOnly {
		toks := make([]string, len(c.Tokens))
		for i, id := range c.Tokens {
			toks[i] = fmt.Sprintf("token_id:%d", id)
		}
		choice["logprobs"] = map[string]any{"tokens": toks, "token_logprobs": c.LogProbs}
	}
	json.NewEncoder(w).Encode(map[string]any{"model": served, "choices": []any{choice}})
}

func (v *vllm) record() (loads, unloads []string, chats int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.loads...), append([]string(nil), v.unloads...), v.chats
}

// fleetConfig is a LoRA run whose every sample is trained on (threshold
// 0), so the adapters move at every step.
func fleetConfig(t *testing.T) Config {
	cfg := loraConfig(t)
	cfg.Threshold = 0
	return cfg
}

func runLocal(t *testing.T, cfg Config, id string) Summary {
	t.Helper()
	env := testEnv(t, openDB(t))
	env.Policy = nil // the model's own chat policy, as a run without servers samples
	e, err := New(cfg, env, id)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// withoutEntropy is s less what a server cannot report: the token
// entropies of its samples.
func withoutEntropy(s Summary) Summary {
	s.Entropy = nil
	s.Phases = append([]PhaseRecord(nil), s.Phases...)
	for i := range s.Phases {
		s.Phases[i].Entropy = nil
	}
	return s
}

// A LoRA run whose rollouts, weight phases included, come from two fake
// vLLM replicas serving the adapters the engine exports after every step
// ends exactly as the same run sampled by the local model: the same
// weights, checkpoints, scores and ledgers. Every replica loaded every
// adapter and unloaded all but the last.
func TestAFleetLoRAWeightPhaseEndsBitIdenticalToTheLocalRun(t *testing.T) {
	cfg := fleetConfig(t)
	local := runLocal(t, cfg, "fleet")

	a, b := newVLLM(t, *cfg.LoRA, cfg.Seed), newVLLM(t, *cfg.LoRA, cfg.Seed)
	cfg.PolicyServer = &PolicyServer{URL: a.url(), URLs: []string{a.url(), b.url()}, Model: "whale-base", Concurrency: 2,
		Adapters: filepath.Join(t.TempDir(), "adapters")}
	db := openDB(t)
	env := testEnv(t, db)
	env.Policy = nil
	e, err := New(cfg, env, "fleet")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.FinalWeights == local.FinalWeights && local.FinalWeights == "" {
		t.Fatal("no final weights")
	}
	for i := range min(len(got.Phases), len(local.Phases)) {
		g, l := got.Phases[i], local.Phases[i]
		g.Entropy, l.Entropy = nil, nil
		if !reflect.DeepEqual(g, l) {
			t.Logf("phase %d: fleet %+v\nlocal %+v", i, g, l)
		}
	}
	if !reflect.DeepEqual(withoutEntropy(got), withoutEntropy(local)) {
		t.Fatalf("the fleet's run\n%+v\nthe local run\n%+v", withoutEntropy(got), withoutEntropy(local))
	}
	st := e.fleet.status()
	if st.Fleet.Stale+st.Fleet.Tokens+st.Fleet.Prompt != 0 || st.Fleet.Retokenized != 0 {
		t.Errorf("fleet counts %+v: want no refused or re-tokenized sample", *st.Fleet)
	}
	la, ua, ca := a.record()
	lb, ub, cb := b.record()
	if ca == 0 || cb == 0 {
		t.Errorf("chats: %d and %d, want both replicas used", ca, cb)
	}
	if len(la) != st.Fleet.Loads || !reflect.DeepEqual(la, lb) || len(la) < 3 {
		t.Errorf("loads %v and %v, fleet counted %d", la, lb, st.Fleet.Loads)
	}
	if !reflect.DeepEqual(ua, la[:len(la)-1]) || !reflect.DeepEqual(ub, ua) {
		t.Errorf("unloads %v and %v, want every load but the last %v", ua, ub, la)
	}
	if ents, _ := os.ReadDir(cfg.PolicyServer.Adapters); len(ents) != 1 || ents[0].Name() != la[len(la)-1] {
		t.Errorf("the adapters folder holds %v, want the last adapter %s alone", ents, la[len(la)-1])
	}
	// Every stored sample names the adapter that served it: the one
	// exported from the weights it records, at its step.
	n := 0
	err = db.Samples("fleet", 0, func(_ uint64, b []byte) error {
		var r SampleRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if r.Kind == "w" && !strings.HasPrefix(r.Policy, fmt.Sprintf("fleet-s%d-%s", r.Step, ShortHash(r.Weights))) {
			t.Errorf("a step-%d sample of weights %s names adapter %q", r.Step, ShortHash(r.Weights), r.Policy)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("stored samples: %d (%v)", n, err)
	}
	if st := e.State().Servers; st == nil || len(st.Endpoints) != 2 || st.Fleet == nil || st.Fleet.Loads == 0 {
		t.Errorf("the state's servers: %+v", st)
	}
}

// A full-weight run is refused with servers, as is a weight phase
// without a shared adapters folder.
func TestAFleetRefusesFullWeightsAndAMissingAdaptersFolder(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1", Model: "m", Adapters: t.TempDir()}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--lora-rank") || !strings.Contains(err.Error(), "weight-sync") {
		t.Errorf("full weights with servers: %v", err)
	}
	cfg = tinyConfig(t)
	cfg.Condition = "harness-only"
	cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1", Model: "m", Adapters: t.TempDir()}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "adapters folder is for the weight phases") {
		t.Errorf("an adapters folder for a harness-only run: %v", err)
	}
	cfg = fleetConfig(t)
	cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1", Model: "m"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--fleet-adapters") {
		t.Errorf("no adapters folder: %v", err)
	}
}

// crlfBytes is the byte tokenizer behind a normalizer that writes "\r\n"
// as "\n": text with "\r\n" does not survive encoding and decoding.
type crlfBytes struct{ tokenizer.Bytes }

func (c crlfBytes) Encode(s string) []int32 {
	return c.Bytes.Encode(strings.ReplaceAll(s, "\r\n", "\n"))
}

// A sample whose reply names another adapter than the one asked for is
// refused — kept out of the weight step and counted — as is text with no
// ids that does not round-trip through the run's tokenizer; text that
// does is re-tokenized and kept.
func TestAStaleAdapterSampleIsRefusedAndRetokenizationMismatchesAreCounted(t *testing.T) {
	cfg := fleetConfig(t)
	m, err := model.New(testModel, kernels.NewCPU(), 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableLoRA(*cfg.LoRA, 1); err != nil {
		t.Fatal(err)
	}
	v := newVLLM(t, *cfg.LoRA, cfg.Seed)
	ps := PolicyServer{URL: v.url(), Model: "base", MaxN: 1, Adapters: t.TempDir()}
	pool, err := ps.Policy(1)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.NewTemplate(crlfBytes{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFleet(pool, tmpl, m, "run", ps, func() (string, int) { return "w0", 0 })
	if err != nil {
		t.Fatal(err)
	}
	reqs := func(prefix string, n int) []policy.Request {
		var out []policy.Request
		for i := range n {
			out = append(out, policy.Request{Key: fmt.Sprintf("%s%d", prefix, i), Messages: []policy.Message{{Role: "user", Content: fmt.Sprintf("q%d", i)}},
				MaxNewTokens: 12, Temperature: 1, Seed: cfg.Seed})
		}
		return out
	}
	ctx := context.Background()
	if _, err := f.Generate(ctx, reqs("fresh/", 3)); err != nil {
		t.Fatal(err)
	}
	if len(f.takeRefused()) != 0 {
		t.Fatal("a fresh adapter's samples were refused")
	}
	v.mu.Lock()
	v.stale, v.staleAs = map[string]bool{"w3/1": true, "w3/2": true}, "run-s-1-old"
	v.mu.Unlock()
	cs, err := f.Generate(ctx, reqs("w3/", 3))
	if err != nil {
		t.Fatal(err)
	}
	refused := f.takeRefused()
	if len(refused) != 2 || refused["w3/1"] != "stale" || refused["w3/2"] != "stale" || refused["w3/0"] != "" {
		t.Fatalf("refused %v, want w3/1 and w3/2 as stale", refused)
	}
	if len(cs[1].Tokens) == 0 || len(cs[1].Prompt) == 0 {
		t.Fatalf("a refused sample still carries its tokens for people: %+v", cs[1])
	}
	if st := f.status().Fleet; st.Stale != 2 || st.Tokens != 0 {
		t.Fatalf("counts %+v after two stale replies", *st)
	}
	// The engine keeps the stale samples out of the step.
	e := &Engine{fleet: f}
	ts := []harnesses.Trajectory{{TaskID: "a", Calls: []harnesses.Call{{Key: "w3/0"}}}, {TaskID: "b", Calls: []harnesses.Call{{Key: "x"}, {Key: "w3/1"}}}}
	f.refuse("w3/1", "stale")
	kept, hs, err := e.fleetKeep(ts, []string{"h", "h"})
	if err != nil || len(kept) != 1 || kept[0].TaskID != "a" || len(hs) != 1 {
		t.Fatalf("fleetKeep kept %+v (%v)", kept, err)
	}
	if _, _, err := e.fleetKeep(ts[1:], []string{"h"}); err != nil {
		t.Fatalf("nothing refused: %v", err)
	}
	f.refuse("x", "stale")
	if _, _, err := e.fleetKeep(ts[1:], []string{"h"}); err == nil || !strings.Contains(err.Error(), "every one") {
		t.Fatalf("every sample refused: %v", err)
	}

	// Text alone: re-tokenized and kept when it round-trips, refused and
	// counted when it does not.
	v.mu.Lock()
	v.stale, v.textOnly = nil, true
	v.mu.Unlock()
	cs, err = f.Generate(ctx, reqs("text/", 3))
	if err != nil {
		t.Fatal(err)
	}
	if r := f.takeRefused(); len(r) != 0 || len(cs[0].Tokens) == 0 {
		t.Fatalf("round-tripping text refused %v (tokens %v)", r, cs[0].Tokens)
	}
	v.mu.Lock()
	v.crlf = true
	v.mu.Unlock()
	var withNL []policy.Request
	for i := 0; len(withNL) < 2 && i < 400; i++ {
		// Only replies holding a newline fail the round trip: find chats
		// whose sampled reply has one.
		rs := reqs(fmt.Sprintf("nl%d/", i), 1)
		c, err := f.Generate(ctx, rs)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(c[0].Text, "\r\n") {
			withNL = append(withNL, rs[0])
		}
	}
	r := f.takeRefused()
	if len(withNL) == 0 {
		t.Skip("the test model wrote no newline in 400 replies")
	}
	for _, q := range withNL {
		if r[q.Key] != "tokens" {
			t.Errorf("reply to %s with \\r\\n: refused %q, want tokens", q.Key, r[q.Key])
		}
	}
	st := f.status().Fleet
	if st.Tokens != len(r) || st.Retokenized < 3+len(withNL) {
		t.Errorf("counts %+v: want %d token mismatches, ≥ %d re-tokenized", *st, len(r), 3+len(withNL))
	}
}

// A pool's run resumed with its servers moved takes a list of URLs, and
// one URL makes it a pool of one again.
func TestAmendMovesAPoolOfServers(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Condition = "harness-only"
	cfg.PolicyServer = &PolicyServer{URL: "http://a:1/v1", URLs: []string{"http://a:1/v1", "http://b:1/v1"}, Model: "m"}
	db := openDB(t)
	if err := db.CreateRun("pool", mustJSON(cfg), time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got, err := Amend(db, "pool", Amendment{PolicyURL: "http://c:1/v1,http://d:1/v1,http://e:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if ps := got.PolicyServer; ps.URL != "http://c:1/v1" || !reflect.DeepEqual(ps.Endpoints(), []string{"http://c:1/v1", "http://d:1/v1", "http://e:1/v1"}) {
		t.Fatalf("amended to %+v", ps)
	}
	got, err = Amend(db, "pool", Amendment{PolicyURL: "http://f:1/v1"})
	if err != nil || got.PolicyServer.URLs != nil || !reflect.DeepEqual(got.PolicyServer.Endpoints(), []string{"http://f:1/v1"}) {
		t.Fatalf("amended to one server: %+v (%v)", got.PolicyServer, err)
	}
}
