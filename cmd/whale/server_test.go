package main

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"whale/core/engine"
	"whale/core/remote"
)

// counts is what s has seen so far.
func (s *answeringServer) counts() (n int, auth map[string]bool, temps map[float64]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, maps.Clone(s.auth), maps.Clone(s.temps)
}

// answeringServer is a fake OpenAI-compatible server that answers every
// choice with reply and counts the choices and the API keys it saw.
type answeringServer struct {
	url   string
	mu    sync.Mutex
	n     int
	auth  map[string]bool
	temps map[float64]bool
}

func newAnsweringServer(t *testing.T, reply string) *answeringServer {
	s := &answeringServer{auth: map[string]bool{}, temps: map[float64]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			N           int     `json:"n"`
			Temperature float64 `json:"temperature"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"error": {"message": "bad body"}}`, http.StatusBadRequest)
			return
		}
		n := max(1, body.N)
		s.mu.Lock()
		s.n += n
		s.auth[r.Header.Get("Authorization")] = true
		s.temps[body.Temperature] = true
		s.mu.Unlock()
		cs := make([]map[string]any, n)
		for j := range cs {
			cs[j] = map[string]any{"index": j, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": cs})
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/v1"
	return s
}

func TestHarnessRunAndEvalSampleFromAServer(t *testing.T) {
	t.Setenv(remote.APIKeyEnv, "sk-whale")
	s := newAnsweringServer(t, "<answer>-1</answer>")
	out, err := runWhale(t, "harness", "run", "h0", "--domain", "math", "--n", "5", "--temperature", "0.5",
		"--policy-url", s.url, "--policy-model", "served", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep harnessRunReport
	lastJSONLine(t, out, &rep)
	before, auth, temps := s.counts()
	if rep.Rollouts != 5 || rep.Calls != before || !strings.HasPrefix(rep.Policy, "server (served at http://") {
		t.Errorf("report %+v; the server answered %d choices", rep, before)
	}
	if !auth["Bearer sk-whale"] || len(auth) != 1 || !temps[0.5] || len(temps) != 1 {
		t.Errorf("the server saw keys %v and temperatures %v, want only the environment's key and 0.5", auth, temps)
	}
	out, err = runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--n", "3", "--k", "2",
		"--policy-url", s.url, "--policy-model", "served", "--policy-concurrency", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ev evalReport
	lastJSONLine(t, out, &ev)
	after, _, _ := s.counts()
	if ev.Rollouts != 6 || ev.PolicyCalls != after-before || !strings.HasPrefix(ev.Policy, "server (served at") || ev.Model != "" {
		t.Errorf("eval report %+v; the server answered %d choices", ev, after-before)
	}
}

func TestServerFlagsAreRefusedWhereTheyCannotWork(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--headless", "--domain", "math", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m"},
			"only as LoRA adapters that whale loads into them (add --lora-rank); whole weights would need a weight-sync path"},
		{[]string{"run", "--headless", "--domain", "math", "--condition", "weight-only", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m"},
			"or run the harness-only condition"},
		{[]string{"run", "--headless", "--domain", "math", "--lora-rank", "2", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m"},
			"--fleet-adapters DIR"},
		{[]string{"run", "--headless", "--domain", "math", "--fleet-sync-every", "2"}, "--fleet-sync-every needs --policy-url"},
		{[]string{"run", "--headless", "--domain", "math", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m", "--fleet-sync-every", "2"},
			"need --fleet-adapters DIR"},
		{[]string{"eval", "--domain", "math", "--harness", "h0", "--policy-url", "http://127.0.0.1:1/v1", "--policy-url", "http://127.0.0.1:1/v1/", "--policy-model", "m"}, "given twice"},
		{[]string{"eval", "--domain", "math", "--harness", "h0", "--policy-model", "m"}, "--policy-model needs --policy-url"},
		{[]string{"eval", "--domain", "math", "--harness", "h0", "--policy-url", "http://127.0.0.1:1/v1"}, "needs --policy-model"},
		{[]string{"eval", "--domain", "math", "--harness", "h0", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m", "--policy", "oracle"}, "drop --policy"},
		{[]string{"eval", "--domain", "math", "--harness", "h0", "--policy-url", "127.0.0.1:1", "--policy-model", "m"}, "want http(s)://host"},
		{[]string{"harness", "run", "h0", "--domain", "math", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m", "--policy-concurrency", "0"}, "--policy-concurrency 0"},
		{[]string{"harness", "run", "h0", "--domain", "math", "--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m", "--policy", "random"}, "drop --policy random"},
		{[]string{"harness", "run", "h0", "--domain", "math", "--temperature", "0.3"}, "--temperature needs --policy-url"},
	} {
		_, err := runWhale(t, c.args...)
		if err == nil || !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("whale %s: %v, want a usage error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// A harness-only run samples every rollout from the server and stores
// where they came from, never the key.
func TestAHarnessOnlyRunSamplesFromAServer(t *testing.T) {
	t.Setenv(remote.APIKeyEnv, "sk-never-stored")
	s := newAnsweringServer(t, "<answer>3</answer>")
	db := filepath.Join(t.TempDir(), "w.db")
	out, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--condition", "harness-only",
		"--budget", "24", "--proposer", "mutation", "--db", db, "--policy-url", s.url, "--policy-model", "served", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum engine.Summary
	lastJSONLine(t, out, &sum)
	n, auth, _ := s.counts()
	if sum.ModelCalls+sum.EvalCalls != n || n == 0 || !auth["Bearer sk-never-stored"] {
		t.Errorf("summary %d + %d model calls; the server answered %d choices with keys %v", sum.ModelCalls, sum.EvalCalls, n, auth)
	}
	out, err = runWhale(t, "show", sum.RunID, "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"policy_server":{"url":"`+s.url+`","model":"served"`) || strings.Contains(out, "sk-never-stored") {
		t.Errorf("stored config does not name the server, or holds the key:\n%s", out)
	}
}
