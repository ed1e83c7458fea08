package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"whale/core/policy"
)

// fake is a local OpenAI-compatible server: it records every call's body
// and headers, counts the calls in flight, and answers with handle.
type fake struct {
	t      *testing.T
	srv    *httptest.Server
	handle func(w http.ResponseWriter, r *http.Request, body chatRequest, call int)

	mu      sync.Mutex
	raw     [][]byte
	bodies  []chatRequest
	headers []http.Header
	paths   []string
	// inFlight and peak count calls being handled now and at most.
	inFlight, peak int
}

func newFake(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body chatRequest, call int)) *fake {
	f := &fake{t: t, handle: handle}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake server: read body: %v", err)
		return
	}
	var body chatRequest
	if err := json.Unmarshal(raw, &body); err != nil {
		f.t.Errorf("fake server: body is not a chat request: %v: %s", err, raw)
	}
	f.mu.Lock()
	call := len(f.raw)
	f.raw, f.bodies = append(f.raw, raw), append(f.bodies, body)
	f.headers, f.paths = append(f.headers, r.Header.Clone()), append(f.paths, r.URL.Path)
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	f.handle(w, r, body, call)
}

func (f *fake) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.raw)
}

// record is a copy of what the server saw, taken under its lock.
type record struct {
	raw     [][]byte
	bodies  []chatRequest
	headers []http.Header
	paths   []string
	peak    int
}

func (f *fake) seen() record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return record{slices.Clone(f.raw), slices.Clone(f.bodies), slices.Clone(f.headers), slices.Clone(f.paths), f.peak}
}

// reset forgets the calls seen, so that handlers count from 0 again.
func (f *fake) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.raw, f.bodies, f.headers, f.paths, f.peak = nil, nil, nil, nil, 0
}

// url is the endpoint base a Policy is pointed at.
func (f *fake) url() string { return f.srv.URL + "/v1" }

// choice is one choice of a reply.
type choice struct {
	Index        int    `json:"index"`
	Message      any    `json:"message,omitempty"`
	FinishReason string `json:"finish_reason"`
	Logprobs     any    `json:"logprobs,omitempty"`
}

// reply writes a 200 reply with choices.
func reply(w http.ResponseWriter, cs ...choice) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "choices": cs})
}

// text is the message of a choice saying s.
func text(s string) any { return map[string]any{"role": "assistant", "content": s} }

// logprobs is a choice's logprobs holding lps.
func logprobs(lps ...float64) any {
	content := make([]map[string]any, len(lps))
	for i, lp := range lps {
		content[i] = map[string]any{"token": fmt.Sprintf("t%d", i), "logprob": lp, "bytes": []int{116}, "top_logprobs": []any{}}
	}
	return map[string]any{"content": content}
}

// echo answers every call with n choices "key-less echo of the last
// message #j", finished by stop.
func echo(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
	n := max(1, body.N)
	cs := make([]choice, n)
	for j := range cs {
		cs[j] = choice{Index: j, Message: text(fmt.Sprintf("%s #%d", body.Messages[len(body.Messages)-1].Content, j)), FinishReason: "stop"}
	}
	reply(w, cs...)
}

// fail writes an error reply in OpenAI's form.
func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "code": status}})
}

// newTest is a Policy on f whose waits between attempts are recorded in
// *waits instead of slept.
func newTest(t *testing.T, f *fake, o Options, waits *[]time.Duration) *Policy {
	t.Helper()
	o.URL, o.Model = f.url(), "qwen3-test"
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	p.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		if waits != nil {
			*waits = append(*waits, d)
		}
		mu.Unlock()
		return ctx.Err()
	}
	return p
}

func ask(key, content string) policy.Request {
	return policy.Request{Key: key, Messages: []policy.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: content}},
		MaxNewTokens: 32, Temperature: 1, Seed: 7}
}

// wantErr fails unless err says every one of parts.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}
