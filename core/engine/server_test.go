package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A harness-only run with a server as its policy samples every rollout
// there: the choices the server handed out are exactly the model calls
// the ledger counts (search and evaluation; the null audit's scripted
// policies never call the model).
func TestAServerPolicySamplesEveryRolloutOfAHarnessOnlyRun(t *testing.T) {
	var mu sync.Mutex
	calls, choices := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			N     int    `json:"n"`
			Model string `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != "served" {
			http.Error(w, `{"error": {"message": "bad request"}}`, http.StatusBadRequest)
			return
		}
		n := max(1, body.N)
		mu.Lock()
		calls, choices = calls+1, choices+n
		mu.Unlock()
		cs := make([]map[string]any, n)
		for j := range cs {
			cs[j] = map[string]any{"index": j, "message": map[string]any{"role": "assistant", "content": "<answer>7</answer>"}, "finish_reason": "stop"}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": cs})
	}))
	defer srv.Close()
	cfg := tinyConfig(t)
	cfg.Condition, cfg.MaxRounds, cfg.Budget, cfg.Proposer = "harness-only", 0, 24, "mutation"
	cfg.PolicyServer = &PolicyServer{URL: srv.URL + "/v1", Model: "served", Concurrency: 2}
	env := testEnv(t, openDB(t))
	env.Policy = nil
	e, err := New(cfg, env, "served")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	l := e.State().Ledger
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 || choices != l.SearchCalls+l.EvalCalls || l.TrainCalls != 0 {
		t.Errorf("the server answered %d calls of %d choices; the ledger counts %d search, %d evaluation and %d training calls",
			calls, choices, l.SearchCalls, l.EvalCalls, l.TrainCalls)
	}
}

func TestAServerPolicyIsRefusedWhereWeightsTrain(t *testing.T) {
	for _, cond := range []string{"", "weight-only", "staged", "fast-slow"} {
		cfg := tinyConfig(t)
		cfg.Condition, cfg.Budget = cond, 100
		if cond == "fast-slow" {
			cfg.I = 1
		}
		cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1", Model: "m"}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "policy_server") || !strings.Contains(err.Error(), "harness-only") {
			t.Errorf("condition %q with a server policy: %v, want a refusal naming policy_server and harness-only", cond, err)
		}
	}
	cfg := tinyConfig(t)
	cfg.Condition = "harness-only"
	cfg.PolicyServer = &PolicyServer{URL: "http://127.0.0.1:1/v1"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model name") {
		t.Errorf("a server policy without a model: %v", err)
	}
	cfg.PolicyServer.Model, cfg.SampleBF16 = "m", true
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "sample_bf16") {
		t.Errorf("bfloat16 sampling with a server policy: %v, want a refusal naming sample_bf16", err)
	}
}
