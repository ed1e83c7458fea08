package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"time"

	"whale/harnesses"
)

// LLM asks a chat model behind an OpenAI-compatible endpoint (vLLM,
// SGLang, llama.cpp server, …) for candidate harnesses: it sends the
// incumbent's source, the harness contract and recent failure traces, and
// takes every fenced code block of the reply as a full candidate source.
// Candidates that do not load are dropped (and counted). Replies of a
// remote model are not reproducible, so this proposer is off by default.
type LLM struct {
	// URL is the endpoint base, e.g. http://127.0.0.1:8000/v1.
	URL   string
	Model string
	// Env validates candidates as the runtime will load them.
	Env harnesses.Env
	// Contract is a description of the harness contract for the prompt.
	Contract string
	// Traces are recent failure traces (short text), newest last.
	Traces []string
	Client *http.Client
	// Rejected counts candidates dropped because they did not load.
	Rejected int
}

func (l *LLM) Name() string { return "llm" }

// maxReply bounds what is read from the endpoint.
const maxReply = 1 << 20

var fence = regexp.MustCompile("(?s)```[a-zA-Z]*\\n(.*?)```")

func (l *LLM) Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error) {
	inc, ok := a.Entries[a.Incumbent]
	if !ok {
		return nil, fmt.Errorf("search: llm proposer needs an incumbent")
	}
	var frozen []string
	for k := range a.Frozen {
		frozen = append(frozen, k)
	}
	var user strings.Builder
	fmt.Fprintf(&user, "The incumbent harness (val score %.3f):\n```starlark\n%s```\n", inc.Score, inc.Source)
	if len(frozen) > 0 {
		fmt.Fprintf(&user, "\nDo not change these knobs: %s.\n", strings.Join(frozen, ", "))
	}
	if len(l.Traces) > 0 {
		user.WriteString("\nRecent failures under the incumbent:\n")
		for _, t := range l.Traces[max(0, len(l.Traces)-8):] {
			fmt.Fprintf(&user, "---\n%s\n", t)
		}
	}
	fmt.Fprintf(&user, "\nWrite %d improved harnesses. Each must be a complete Starlark source in its own ```starlark block. Change one mechanism each.", n)
	body, _ := json.Marshal(map[string]any{
		"model": l.Model,
		"messages": []map[string]string{
			{"role": "system", "content": "You improve agent harnesses written in Starlark. A harness presents the task and parses the model's answer; it must never solve the task itself.\n" + l.Contract},
			{"role": "user", "content": user.String()},
		},
		"temperature": 0.7,
		"seed":        rng.Uint64() >> 1,
	})
	url := strings.TrimRight(l.URL, "/") + "/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("search: llm proposer: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := l.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Minute}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("search: llm proposer: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return nil, fmt.Errorf("search: llm proposer: read %s: %w", url, err)
	}
	if len(raw) > maxReply {
		return nil, fmt.Errorf("search: llm proposer: reply from %s exceeds %d bytes", url, maxReply)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("search: llm proposer: %s answered %s: %.200s", url, resp.Status, raw)
	}
	var reply struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil || len(reply.Choices) == 0 {
		return nil, fmt.Errorf("search: llm proposer: %s did not answer with chat choices: %.200s", url, raw)
	}
	var out []Candidate
	seen := map[string]bool{}
	for _, m := range fence.FindAllStringSubmatch(reply.Choices[0].Message.Content, -1) {
		h, err := harnesses.Load("llm-candidate.star", m[1], l.Env)
		if err != nil {
			l.Rejected++
			continue
		}
		if a.known(h.Hash) || seen[h.Hash] || h.Hash == inc.Hash {
			continue
		}
		seen[h.Hash] = true
		out = append(out, Candidate{Source: h.Source, Hash: h.Hash, Parent: inc.Hash, Mechanism: "llm", Proposer: "llm"})
		if len(out) == n {
			break
		}
	}
	return out, nil
}
