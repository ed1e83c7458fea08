package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"whale/core/policy"
)

// replica is a fake server of a fleet: its answer to a chat is fixed by
// the chat, the seed and the choice (as a replica of one model with a
// fixed seed is), so that which replica serves a call changes nothing.
// It counts chat calls and can be told to die (every later connection
// closed unanswered), to fail (503), or to hold its calls until released.
type replica struct {
	t   *testing.T
	srv *httptest.Server

	mu                sync.Mutex
	chats, health     int
	dieAfter, failFor int // die after this many chats (0: never); fail the next failFor chats
	dead              bool
	hold              chan struct{} // non-nil: chats wait for it to close
	models            []string      // the model each chat asked for
}

func newReplica(t *testing.T) *replica {
	r := &replica{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *replica) url() string { return r.srv.URL + "/v1" }

func (r *replica) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		hj, _ := w.(http.Hijacker)
		conn, _, err := hj.Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if req.Method == http.MethodGet {
		r.health++
		r.mu.Unlock()
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	r.chats++
	if r.chats > 400 {
		r.mu.Unlock()
		r.t.Errorf("replica %s: more than 400 chat calls", r.srv.URL)
		fail(w, 500, "too many calls")
		return
	}
	if r.dieAfter > 0 && r.chats > r.dieAfter {
		r.dead = true
		r.mu.Unlock()
		r.serve(w, req)
		return
	}
	if r.failFor > 0 {
		r.failFor--
		r.mu.Unlock()
		fail(w, http.StatusServiceUnavailable, "overloaded")
		return
	}
	hold := r.hold
	r.mu.Unlock()
	if hold != nil {
		<-hold
	}
	var body chatRequest
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		r.t.Errorf("replica: %v", err)
		return
	}
	r.mu.Lock()
	r.models = append(r.models, body.Model)
	r.mu.Unlock()
	cs := make([]choice, max(1, body.N))
	for j := range cs {
		cs[j] = choice{Index: j, FinishReason: "stop",
			Message: text(fmt.Sprintf("%s/%d/%d", body.Messages[len(body.Messages)-1].Content, body.Seed, j))}
	}
	reply(w, cs...)
}

func (r *replica) counts() (chats, health int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.chats, r.health
}

func newTestPool(t *testing.T, o PoolOptions, rs ...*replica) *Pool {
	t.Helper()
	for _, r := range rs {
		o.URLs = append(o.URLs, r.url())
	}
	o.Model = "qwen3-test"
	pl, err := NewPool(o)
	if err != nil {
		t.Fatal(err)
	}
	pl.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	return pl
}

// batches are the requests of a short run: rounds of distinct chats, two
// of each asked twice (one call with n = 2).
func batches(rounds, per int) [][]policy.Request {
	var out [][]policy.Request
	for r := range rounds {
		var b []policy.Request
		for i := range per {
			q := ask(fmt.Sprintf("r%d/t%d#0", r, i), fmt.Sprintf("task %d of round %d", i, r))
			b = append(b, q)
			if i < 2 {
				q.Key = fmt.Sprintf("r%d/t%d#1", r, i)
				b = append(b, q)
			}
		}
		out = append(out, b)
	}
	return out
}

func runBatches(t *testing.T, pl *Pool, bs [][]policy.Request) [][]policy.Completion {
	t.Helper()
	var out [][]policy.Completion
	for i, b := range bs {
		cs, err := pl.Generate(context.Background(), b)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		out = append(out, cs)
	}
	return out
}

// A pool of three whose third replica dies in the middle of the second
// batch answers every request, exactly as a pool of the other two does;
// the dead one is taken out and its calls go elsewhere.
func TestAPoolOfThreeWhoseReplicaDiesLosesNoSampleAndMatchesAPoolOfTwo(t *testing.T) {
	bs := batches(4, 10)
	a, b, c := newReplica(t), newReplica(t), newReplica(t)
	c.dieAfter = 5
	three := newTestPool(t, PoolOptions{Options: Options{Concurrency: 2}}, a, b, c)
	got := runBatches(t, three, bs[:1])
	if n, _ := c.counts(); n == 0 || n >= 5 {
		t.Fatalf("the third replica answered %d calls of the first batch, want 1 to 4 (it is to die in the second)", n)
	}
	got = append(got, runBatches(t, three, bs[1:])...)

	two := newTestPool(t, PoolOptions{Options: Options{Concurrency: 2}}, newReplica(t), newReplica(t))
	want := runBatches(t, two, bs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the pool of three (one dead) answered\n%v\nthe pool of two\n%v", got, want)
	}
	st := three.Stats()
	calls := 0
	for _, s := range st {
		calls += s.Calls
	}
	if want := 4 * 10; calls != want { // 8 pairs go as one call of n = 2 each
		t.Errorf("answered calls %d, want %d: %+v", calls, want, st)
	}
	if !st[2].Out || st[2].TakenOut != 1 || st[2].Errors < DefaultFailLimit || st[2].Calls != 5 {
		t.Errorf("the dead replica's figures %+v: want out once, ≥ %d errors, its 5 answered calls", st[2], DefaultFailLimit)
	}
	if st[0].Calls == 0 || st[1].Calls == 0 || st[0].LatencyMS <= 0 {
		t.Errorf("the live replicas' figures: %+v", st)
	}
	if n, _ := c.counts(); n > 5+DefaultFailLimit+1 {
		t.Errorf("the dead replica saw %d chat calls after it died (want at most the %d that take it out)", n-5, DefaultFailLimit)
	}
}

// Calls go to the replica with the fewest in flight: a replica that holds
// every call it gets (a stuck GPU) never has more than the caller's
// window at once, so it gets at most two of forty calls made three at a
// time, and the other replica all the rest.
func TestLeastInFlightRoutingShowsInThePerEndpointCounts(t *testing.T) {
	slow, fast := newReplica(t), newReplica(t)
	slow.hold = make(chan struct{})
	pl := newTestPool(t, PoolOptions{Options: Options{Concurrency: 8}}, slow, fast)
	st, err := pl.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n, window = 40, 3
	submitted, done := 0, 0
	submit := func() {
		if err := st.Submit(submitted, ask(fmt.Sprintf("k%d", submitted), fmt.Sprintf("chat %d", submitted))); err != nil {
			t.Fatal(err)
		}
		submitted++
	}
	for range window {
		submit()
	}
	released := false
	for done < n {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if !released && submitted == n && done >= n-2 {
			close(slow.hold) // only the held calls are left
			released = true
		}
		if _, err := st.Next(ctx); err != nil {
			cancel()
			if !released {
				close(slow.hold)
				released = true
				continue
			}
			t.Fatal(err)
		}
		cancel()
		done++
		if submitted < n {
			submit()
		}
	}
	if !released {
		close(slow.hold)
	}
	s := pl.Stats()
	if s[0].Calls > 2 || s[0].Calls+s[1].Calls != n {
		t.Fatalf("held replica %d calls, free one %d: want at most 2 and the rest (%d in all)", s[0].Calls, s[1].Calls, n)
	}
}

// An endpoint that keeps failing is taken out; once its cooldown passes
// and its health check passes it takes calls again.
func TestAFailingEndpointIsTakenOutAndRejoinsAfterItsHealthCheck(t *testing.T) {
	a, b := newReplica(t), newReplica(t)
	b.failFor = DefaultFailLimit
	pl := newTestPool(t, PoolOptions{Cooldown: time.Millisecond}, a, b)
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	pl.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	// Chats that b's affinity prefers, one at a time: each fails at b and
	// goes to a, until b is out.
	var onB []policy.Request
	for i := 0; len(onB) < 8; i++ {
		q := ask(fmt.Sprintf("k%d", i), fmt.Sprintf("chat %d", i))
		if affinity(q, 2) == 1 {
			onB = append(onB, q)
		}
	}
	for _, q := range onB[:DefaultFailLimit] {
		if _, err := pl.Generate(context.Background(), []policy.Request{q}); err != nil {
			t.Fatal(err)
		}
	}
	if s := pl.Stats()[1]; !s.Out || s.Errors != DefaultFailLimit {
		t.Fatalf("after %d failures b is %+v, want out", DefaultFailLimit, s)
	}
	if _, err := pl.Generate(context.Background(), onB[DefaultFailLimit:DefaultFailLimit+1]); err != nil {
		t.Fatal(err)
	}
	if s := pl.Stats()[1]; !s.Out || s.Calls != 0 {
		t.Fatalf("within its cooldown b is %+v, want out with no call", s)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	for _, q := range onB[DefaultFailLimit+1:] {
		if _, err := pl.Generate(context.Background(), []policy.Request{q}); err != nil {
			t.Fatal(err)
		}
	}
	s := pl.Stats()[1]
	if _, health := b.counts(); s.Out || s.Calls == 0 || health != 1 {
		t.Fatalf("after its cooldown b is %+v with %d health checks, want back in with calls after one check", s, health)
	}
}

// Every replica dead: the call fails, naming the attempts, and does not
// hang.
func TestAPoolWhoseEveryEndpointFailsGivesUp(t *testing.T) {
	a, b := newReplica(t), newReplica(t)
	a.failFor, b.failFor = 1000, 1000
	pl := newTestPool(t, PoolOptions{Options: Options{Attempts: 2}, Cooldown: time.Hour}, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := pl.Generate(ctx, []policy.Request{ask("k", "x")})
	wantErr(t, err, "503")
	if ca, _ := a.counts(); ca > 4 {
		t.Errorf("replica a saw %d calls, want at most 4", ca)
	}
}

func TestNewPoolRefusesBadOptions(t *testing.T) {
	for _, o := range []PoolOptions{
		{},
		{URLs: []string{"http://a:1/v1", "http://a:1/v1/"}, Options: Options{Model: "m"}},
		{URLs: []string{"ftp://a/v1"}, Options: Options{Model: "m"}},
		{URLs: []string{"http://a:1/v1"}, Options: Options{Model: "m"}, FailLimit: -1},
	} {
		if _, err := NewPool(o); err == nil {
			t.Errorf("NewPool(%+v) accepted", o)
		}
	}
}
