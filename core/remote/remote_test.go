package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"whale/core/policy"
)

func TestACallCarriesTheChatModelSamplingOptionsAndKey(t *testing.T) {
	f := newFake(t, echo)
	p := newTest(t, f, Options{APIKey: "sk-test"}, nil)
	r := ask("val/t1#0", "What is 2+2?")
	r.Temperature, r.TopP, r.TopK, r.MaxNewTokens = 0.7, 0.9, 20, 64
	plain := ask("val/t2#0", "And 3+3?") // TopP 0, TopK 0: no filters, none sent
	plain.TopP = 1
	if _, err := p.Generate(context.Background(), []policy.Request{r, plain}); err != nil {
		t.Fatal(err)
	}
	seen := f.seen()
	if len(seen.raw) != 2 {
		t.Fatalf("%d calls, want 2 (the chats differ)", len(seen.raw))
	}
	for i, want := range []map[string]any{
		{"model": "qwen3-test", "max_tokens": 64.0, "temperature": 0.7, "top_p": 0.9, "top_k": 20.0, "seed": float64(callSeed(r)), "logprobs": true,
			"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "What is 2+2?"}}},
		{"model": "qwen3-test", "max_tokens": 32.0, "temperature": 1.0, "seed": float64(callSeed(plain)), "logprobs": true,
			"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "And 3+3?"}}},
	} {
		// The two calls run concurrently: find this one by its chat.
		j := slices.IndexFunc(seen.bodies, func(b chatRequest) bool {
			return len(b.Messages) == 2 && b.Messages[1].Content == want["messages"].([]any)[1].(map[string]any)["content"]
		})
		if j < 0 {
			t.Fatalf("no call sent chat %d", i)
		}
		var got map[string]any
		if err := json.Unmarshal(seen.raw[j], &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("call %d sent\n%s\nwant\n%v", i, seen.raw[j], want)
		}
		if h := seen.headers[j]; h.Get("Authorization") != "Bearer sk-test" || h.Get("Content-Type") != "application/json" {
			t.Errorf("call %d headers: Authorization %q, Content-Type %q", i, h.Get("Authorization"), h.Get("Content-Type"))
		}
		if seen.paths[j] != "/v1/chat/completions" {
			t.Errorf("call %d posted to %s, want /v1/chat/completions", i, seen.paths[j])
		}
	}
	if callSeed(r) == callSeed(plain) || callSeed(r) < 0 || callSeed(r) >= 1<<31 {
		t.Errorf("seeds %d and %d: want distinct per key and within [0, 2³¹)", callSeed(r), callSeed(plain))
	}
}

func TestIdenticalChatsGoAsOneCallWithNChoicesInIndexOrder(t *testing.T) {
	// The server lists its choices last index first: completions must
	// follow the index, not the list order.
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		n := max(1, body.N)
		cs := make([]choice, n)
		for j := range cs {
			idx := n - 1 - j
			cs[j] = choice{Index: idx, Message: text(body.Messages[1].Content + "/" + string(rune('a'+idx))), FinishReason: "stop"}
		}
		reply(w, cs...)
	})
	p := newTest(t, f, Options{MaxN: 2}, nil)
	reqs := []policy.Request{ask("k", "q1"), ask("k/v1", "q1"), ask("other", "q2"), ask("k/v2", "q1")}
	got, err := p.Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	// With at most 2 choices a call: q1 twice in one call, q2, q1 once more.
	var ns []int
	for _, b := range f.seen().bodies {
		ns = append(ns, b.N)
	}
	slices.Sort(ns) // the calls run concurrently: any order
	if !reflect.DeepEqual(ns, []int{0, 0, 2}) {
		t.Fatalf("calls asked n = %v, want one call of n=2 and two of n=1 (sent as no n)", ns)
	}
	texts := []string{got[0].Text, got[1].Text, got[2].Text, got[3].Text}
	if want := []string{"q1/a", "q1/b", "q2/a", "q1/a"}; !reflect.DeepEqual(texts, want) {
		t.Errorf("completions %q, want %q", texts, want)
	}
	// Unbounded n: the three q1 requests are one call.
	f2 := newFake(t, echo)
	p2 := newTest(t, f2, Options{}, nil)
	if _, err := p2.Generate(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	bodies := f2.seen().bodies
	j := slices.IndexFunc(bodies, func(b chatRequest) bool { return b.N == 3 })
	if len(bodies) != 2 || j < 0 || bodies[j].Seed != callSeed(reqs[0]) {
		t.Errorf("calls %+v; want 2, one of n=3 with the seed of its first key (%d)", bodies, callSeed(reqs[0]))
	}
	// A different sampling option is a different call even for one chat.
	hot := ask("hot", "q1")
	hot.Temperature = 0.5
	f3 := newFake(t, echo)
	if _, err := newTest(t, f3, Options{}, nil).Generate(context.Background(), []policy.Request{ask("k", "q1"), hot}); err != nil {
		t.Fatal(err)
	}
	if f3.calls() != 2 {
		t.Errorf("%d calls for one chat at two temperatures, want 2", f3.calls())
	}
}

func TestLogProbsAndFinishReasonsAreRead(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		reply(w, choice{Index: 0, Message: text("<answer>4</answer>"), FinishReason: "length", Logprobs: logprobs(-0.5, -1.25, 0)},
			choice{Index: 1, Message: text("four"), FinishReason: "stop"})
	})
	p := newTest(t, f, Options{}, nil)
	got, err := p.Generate(context.Background(), []policy.Request{ask("a", "q"), ask("a/v1", "q")})
	if err != nil {
		t.Fatal(err)
	}
	want := []policy.Completion{{Text: "<answer>4</answer>", Finish: policy.FinishLength, LogProbs: []float32{-0.5, -1.25, 0}},
		{Text: "four", Finish: policy.FinishStop}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestRetriesOnConnectionErrors429And5xxThenSucceeds(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		switch call {
		case 0: // the connection drops without a reply
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		case 1:
			fail(w, http.StatusServiceUnavailable, "loading model")
		case 2:
			w.Header().Set("Retry-After", "7")
			fail(w, http.StatusTooManyRequests, "slow down")
		default:
			echo(w, r, body, call)
		}
	})
	var waits []time.Duration
	p := newTest(t, f, Options{Backoff: 100 * time.Millisecond, Seed: 3}, &waits)
	got, err := p.Generate(context.Background(), []policy.Request{ask("a", "q")})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Text != "q #0" || f.calls() != 4 {
		t.Fatalf("got %q after %d calls, want the echo after 4", got[0].Text, f.calls())
	}
	// Two jittered doublings (in [d/2, d] of 100 ms, then of 200 ms), then
	// the server's Retry-After exactly.
	if len(waits) != 3 || waits[0] < 50*time.Millisecond || waits[0] > 100*time.Millisecond ||
		waits[1] < 100*time.Millisecond || waits[1] > 200*time.Millisecond || waits[2] != 7*time.Second {
		t.Errorf("waits %v, want [50ms..100ms, 100ms..200ms, 7s]", waits)
	}
	// The jitter comes from the seeded source: the same seed waits alike.
	var again []time.Duration
	f.reset()
	p2 := newTest(t, f, Options{Backoff: 100 * time.Millisecond, Seed: 3}, &again)
	if _, err := p2.Generate(context.Background(), []policy.Request{ask("a", "q")}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, waits) {
		t.Errorf("a second policy of seed 3 waited %v, the first %v", again, waits)
	}
}

func TestRetriesExhaustedSayHowManyAndTheLastError(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		fail(w, http.StatusBadGateway, "upstream overloaded")
	})
	var waits []time.Duration
	p := newTest(t, f, Options{Attempts: 3}, &waits)
	_, err := p.Generate(context.Background(), []policy.Request{ask("val/t9#0", "q")})
	wantErr(t, err, "gave up after 3 attempts", "HTTP 502 Bad Gateway", "upstream overloaded", `"val/t9#0"`, f.url())
	if f.calls() != 3 || len(waits) != 2 {
		t.Errorf("%d calls and %d waits, want 3 and 2", f.calls(), len(waits))
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound} {
		f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
			fail(w, status, "The model `qwen3-test` does not exist.")
		})
		_, err := newTest(t, f, Options{}, nil).Generate(context.Background(), []policy.Request{ask("a", "q")})
		wantErr(t, err, fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)), "does not exist")
		if f.calls() != 1 {
			t.Errorf("HTTP %d: %d calls, want 1 (not retried)", status, f.calls())
		}
	}
}

func TestATooLongRetryAfterEndsTheCall(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		w.Header().Set("Retry-After", "3600")
		fail(w, http.StatusTooManyRequests, "quota")
	})
	_, err := newTest(t, f, Options{}, nil).Generate(context.Background(), []policy.Request{ask("a", "q")})
	wantErr(t, err, "HTTP 429", "quota", "retry after 1h0m0s")
	if f.calls() != 1 {
		t.Errorf("%d calls, want 1", f.calls())
	}
}

func TestAnAttemptPastTheTimeoutIsRetriedThenFails(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	p := newTest(t, f, Options{Timeout: 50 * time.Millisecond, Attempts: 2}, nil)
	t0 := time.Now()
	_, err := p.Generate(context.Background(), []policy.Request{ask("a", "q")})
	wantErr(t, err, "no complete reply within the timeout of 50ms", "gave up after 2 attempts")
	if f.calls() != 2 || time.Since(t0) > 3*time.Second {
		t.Errorf("%d calls in %s, want 2 calls of about 50 ms", f.calls(), time.Since(t0))
	}
}

func TestCancellingTheContextEndsTheCallsInFlight(t *testing.T) {
	arrived := make(chan struct{}, 8)
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		arrived <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	p := newTest(t, f, Options{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	t0 := time.Now()
	_, err := p.Generate(ctx, []policy.Request{ask("a", "q"), ask("b", "r")})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want one wrapping context.Canceled", err)
	}
	wantErr(t, err, "cancelled")
	if time.Since(t0) > 3*time.Second {
		t.Errorf("cancel took %s", time.Since(t0))
	}
}

func TestNoMoreCallsThanTheConcurrencyBoundAreInFlight(t *testing.T) {
	const bound = 3
	f := newFake(t, nil)
	f.handle = func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		// Hold each call until the bound is reached (or every call has
		// arrived, or a second passed), so that a policy that sent more
		// would show it.
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			f.mu.Lock()
			n, all := f.inFlight, len(f.raw) == 12
			f.mu.Unlock()
			if n >= bound || all {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
		echo(w, r, body, call)
	}
	p := newTest(t, f, Options{Concurrency: bound}, nil)
	var reqs []policy.Request
	for i := range 12 {
		reqs = append(reqs, ask("k"+string(rune('a'+i)), "q"+string(rune('a'+i))))
	}
	got, err := p.Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if seen := f.seen(); len(seen.raw) != 12 || seen.peak != bound {
		t.Errorf("%d calls, at most %d in flight; want 12 calls and exactly %d in flight at the peak", len(seen.raw), seen.peak, bound)
	}
	for i, c := range got {
		if want := reqs[i].Messages[1].Content + " #0"; c.Text != want {
			t.Errorf("completion %d = %q, want %q", i, c.Text, want)
		}
	}
}

func TestMalformedRepliesAreClearErrorsAndNotRetried(t *testing.T) {
	for _, c := range []struct {
		name, body string
		n          int
		want       []string
	}{
		{"not JSON", `<html>502 from the proxy</html>`, 1, []string{"malformed JSON reply", "<html>"}},
		{"no choices", `{"choices": []}`, 1, []string{"no choices"}},
		{"choices missing", `{"object": "chat.completion"}`, 1, []string{"no choices"}},
		{"n ignored", `{"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "stop"}]}`, 2,
			[]string{"asked for n=2 choices, the reply has 1", "maximum n to 1"}},
		{"index twice", `{"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "stop"}, {"index": 0, "message": {"content": "y"}, "finish_reason": "stop"}]}`, 2,
			[]string{"choice index 0", "0..1 once"}},
		{"no message", `{"choices": [{"index": 0, "finish_reason": "stop"}]}`, 1, []string{"choice 0 has no message"}},
		{"finish", `{"choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "tool_calls"}]}`, 1,
			[]string{`finish_reason "tool_calls"`, "want stop or length"}},
		{"no finish", `{"choices": [{"index": 0, "message": {"content": "x"}}]}`, 1, []string{`finish_reason ""`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
				w.Write([]byte(c.body))
			})
			reqs := []policy.Request{ask("a", "q"), ask("a/v1", "q")}[:c.n]
			_, err := newTest(t, f, Options{}, nil).Generate(context.Background(), reqs)
			wantErr(t, err, c.want...)
			if f.calls() != 1 {
				t.Errorf("%d calls, want 1", f.calls())
			}
		})
	}
}

func TestServerMessagesAreReadFromEachCommonErrorShape(t *testing.T) {
	for body, want := range map[string]string{
		`{"error": {"message": "bad top_p", "type": "invalid_request_error"}}`: "bad top_p",
		`{"error": "model not found"}`:                                         "model not found",
		`{"object": "error", "message": "context too long", "code": 400}`:      "context too long",
		`{"detail": "Not Found"}`:                                              "Not Found",
		`{"detail": [{"loc": ["body", "n"], "msg": "too big"}]}`:               `[{"loc": ["body", "n"], "msg": "too big"}]`,
		"plain text failure\n":                                                 "plain text failure",
		"":                                                                     "(empty body)",
		strings.Repeat("é", 400):                                               strings.Repeat("é", 150) + "…",
	} {
		if got := serverMessage([]byte(body)); got != want {
			t.Errorf("serverMessage(%.40q) = %.60q, want %.60q", body, got, want)
		}
	}
}

func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"0": 0, "12": 12 * time.Second, "Tue, 01 Dec 2026 12:00:30 GMT": 30 * time.Second,
		"Tue, 01 Dec 2026 11:00:00 GMT": 0} {
		if got, ok := retryAfter(v, now); !ok || got != want {
			t.Errorf("retryAfter(%q) = %s, %v; want %s", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "soon", "-3"} {
		if _, ok := retryAfter(v, now); ok {
			t.Errorf("retryAfter(%q) read a delay", v)
		}
	}
}

func TestAStreamHandsBackEachCallWhenItFinishes(t *testing.T) {
	release := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body chatRequest, call int) {
		if body.Messages[1].Content == "slow" {
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}
		echo(w, r, body, call)
	})
	p := newTest(t, f, Options{}, nil)
	st, err := p.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Submit(1, ask("a", "slow")); err != nil {
		t.Fatal(err)
	}
	if err := st.Submit(2, ask("b", "fast")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, st.Submit(2, ask("c", "again")), "request id 2", `"c"`, "already in flight")
	bad := ask("d", "x")
	bad.Messages = append(bad.Messages, policy.Message{Role: "narrator", Content: "y"})
	wantErr(t, st.Submit(3, bad), "request id 3", `"d"`, `unknown role "narrator"`)
	res, err := st.Next(ctx)
	if err != nil || res.ID != 2 || res.Completion.Text != "fast #0" {
		t.Fatalf("first Next = %+v, %v; want id 2 (the fast call)", res, err)
	}
	close(release)
	if res, err = st.Next(ctx); err != nil || res.ID != 1 || res.Completion.Text != "slow #0" {
		t.Fatalf("second Next = %+v, %v; want id 1", res, err)
	}
	if _, err := st.Next(ctx); !errors.Is(err, policy.ErrStreamIdle) {
		t.Errorf("Next with nothing in flight = %v, want ErrStreamIdle", err)
	}
	// A request no call could carry is refused; the stream goes on.
	if err := st.Submit(4, policy.Request{Key: "e", Messages: ask("e", "x").Messages}); err == nil || !strings.Contains(err.Error(), "MaxNewTokens 0") {
		t.Errorf("Submit of MaxNewTokens 0 = %v", err)
	}
	if _, err := st.Next(ctx); !errors.Is(err, policy.ErrStreamIdle) {
		t.Errorf("Next after a refused Submit = %v, want ErrStreamIdle", err)
	}
}

func TestNewRefusesBadOptionsNamingThem(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Model: "m"}, "no server URL"},
		{Options{URL: "ftp://h/v1", Model: "m"}, "want http(s)://host"},
		{Options{URL: "127.0.0.1:8000", Model: "m"}, "want http(s)://host"},
		{Options{URL: "http://me:secret@h/v1", Model: "m"}, "holds credentials"},
		{Options{URL: "http://h/v1"}, "no model name"},
		{Options{URL: "http://h/v1", Model: "m", Concurrency: -1}, "concurrency -1"},
		{Options{URL: "http://h/v1", Model: "m", Timeout: -time.Second}, "timeout -1s"},
		{Options{URL: "http://h/v1", Model: "m", Attempts: -2}, "attempts -2"},
		{Options{URL: "http://h/v1", Model: "m", MaxN: -1}, "max n -1"},
	} {
		_, err := New(c.o)
		wantErr(t, err, c.want)
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("error %q shows the password", err)
		}
	}
	p, err := New(Options{URL: "http://h:1/v1/chat/completions/", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if p.endpoint != "http://h:1/v1/chat/completions" {
		t.Errorf("endpoint %q", p.endpoint)
	}
}

func TestAnUnreachableServerIsAConnectionError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	p, err := New(Options{URL: "http://" + addr + "/v1", Model: "m", Attempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	p.sleep = func(ctx context.Context, d time.Duration) error { return nil }
	_, err = p.Generate(context.Background(), []policy.Request{ask("a", "q")})
	wantErr(t, err, "gave up after 2 attempts", "connection:")
}
