package search

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"whale/data/domains"
	"whale/harnesses"
)

func TestLLMProposerAgainstLocalServer(t *testing.T) {
	dom, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := newSearch(t)
	inc := a.Entries[a.Incumbent].Source
	good, _ := harnesses.Mutate(inc, "parse_action", "_parse_bare")
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		json.NewDecoder(r.Body).Decode(&got)
		content := "Here you go.\n```starlark\n" + good + "```\nAnd a broken one:\n```starlark\nSYSTEM_PROMPT = \n```\n"
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": content}}}})
	}))
	defer srv.Close()
	l := &LLM{URL: srv.URL + "/v1", Model: "m", Env: harnesses.EnvOf(dom), Traces: []string{"task 3: format failure"}}
	a.Frozen["MAX_TURNS"] = true
	cs, err := l.Propose(context.Background(), a, rand.New(rand.NewPCG(1, 1)), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Hash != harnesses.Hash(good) || cs[0].Parent != a.Incumbent || l.Rejected != 1 {
		t.Fatalf("candidates %d (rejected %d)", len(cs), l.Rejected)
	}
	msgs, _ := got["messages"].([]any)
	user, _ := msgs[1].(map[string]any)["content"].(string)
	if !strings.Contains(user, "format failure") || !strings.Contains(user, "MAX_TURNS") || got["model"] != "m" {
		t.Fatalf("request did not carry traces, frozen knobs and model: %v", got)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	l.URL = bad.URL
	if _, err := l.Propose(context.Background(), a, rand.New(rand.NewPCG(1, 1)), 3); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("server error: %v", err)
	}
}
