package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"whale/core/policy"
	"whale/core/remote"
	"whale/data"
	"whale/data/domains"
	"whale/harnesses"
)

// oracleBook is what a fake server needs to answer as the oracle: the
// oracle's reply for each chat. The policy in front of the server (front)
// sees each request's key and chat before it goes out, asks the oracle
// for that key's gold reply and writes it down under the chat; the server
// looks the chat up. Two episodes with one chat but different gold
// replies would make the book ambiguous, and are reported.
type oracleBook struct {
	oracle *harnesses.Oracle

	mu     sync.Mutex
	byKey  map[string]string
	byChat map[string]string
	errs   []string
	// calls and choices count what the server was asked.
	calls, choices int
}

func chatKey(msgs []policy.Message) string {
	b, _ := json.Marshal(msgs)
	return string(b)
}

// ObserveRequest makes front a harnesses.RequestObserver: the runtime
// shows it the episode behind each request, and the oracle answers it.
func (b *oracleBook) ObserveRequest(info harnesses.RequestInfo) {
	b.oracle.ObserveRequest(info)
	c, err := b.oracle.Generate(context.Background(), []policy.Request{{Key: info.Key}})
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.errs = append(b.errs, err.Error())
		return
	}
	b.byKey[info.Key] = c[0].Text
}

func (b *oracleBook) learn(r policy.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	text, ok := b.byKey[r.Key]
	if !ok {
		b.errs = append(b.errs, "no oracle reply for key "+r.Key)
	}
	k := chatKey(r.Messages)
	if prev, ok := b.byChat[k]; ok && prev != text {
		b.errs = append(b.errs, fmt.Sprintf("key %s: one chat, two gold replies %q and %q", r.Key, prev, text))
	}
	b.byChat[k] = text
}

func (b *oracleBook) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []policy.Message `json:"messages"`
		N        int              `json:"n"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error": {"message": "bad body"}}`, http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	text, ok := b.byChat[chatKey(body.Messages)]
	b.calls++
	b.choices += max(1, body.N)
	b.mu.Unlock()
	if !ok {
		http.Error(w, `{"error": {"message": "the oracle never saw this chat"}}`, http.StatusBadRequest)
		return
	}
	var choices []map[string]any
	for j := range max(1, body.N) {
		choices = append(choices, map[string]any{"index": j, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"})
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": choices})
}

// front is the remote policy with the book reading its requests, as a
// streaming policy.
type front struct {
	*oracleBook
	pol *remote.Policy
}

func (f front) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	for _, r := range reqs {
		f.learn(r)
	}
	return f.pol.Generate(ctx, reqs)
}

func (f front) OpenStream() (policy.Stream, error) {
	st, err := f.pol.OpenStream()
	return learningStream{st, f.oracleBook}, err
}

type learningStream struct {
	policy.Stream
	b *oracleBook
}

func (s learningStream) Submit(id int, r policy.Request) error {
	s.b.learn(r)
	return s.Stream.Submit(id, r)
}

// batchFront hides OpenStream, so that Run takes its round-by-round path.
type batchFront struct{ f front }

func (b batchFront) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	return b.f.Generate(ctx, reqs)
}
func (b batchFront) Unwrap() policy.Policy { return b.f }

// h0 of every domain, run through a remote policy whose server answers as
// the oracle, scores 1.0 — streamed and round by round, with two samples
// per task, whose first turns share a chat and so go out as one call with
// n = 2.
func TestH0ThroughAServerAnsweringAsTheOracleScoresOne(t *testing.T) {
	for _, name := range domains.Names() {
		for _, streamed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/streamed=%v", name, streamed), func(t *testing.T) {
				d, err := domains.Open(name, 1)
				if err != nil {
					t.Fatal(err)
				}
				h, err := harnesses.LoadBuiltin(d, "h0")
				if err != nil {
					t.Fatal(err)
				}
				tasks, err := d.Tasks(data.SplitVal)
				if err != nil {
					t.Fatal(err)
				}
				tasks = tasks[:min(12, len(tasks))]
				book := &oracleBook{oracle: harnesses.NewOracle(d), byKey: map[string]string{}, byChat: map[string]string{}}
				srv := httptest.NewServer(http.HandlerFunc(book.serve))
				defer srv.Close()
				pol, err := remote.New(remote.Options{URL: srv.URL + "/v1", Model: "oracle", Concurrency: 4, Attempts: 1})
				if err != nil {
					t.Fatal(err)
				}
				var p policy.Policy = front{book, pol}
				if !streamed {
					p = batchFront{front{book, pol}}
				}
				ts, err := harnesses.Run(context.Background(), h, d, tasks, p, harnesses.RunOptions{Seed: 1, K: 2, MaxNewTokens: 256, KeyPrefix: "val/"})
				if err != nil {
					t.Fatal(err)
				}
				book.mu.Lock()
				defer book.mu.Unlock()
				for _, e := range book.errs {
					t.Error(e)
				}
				calls := 0
				for _, tr := range ts {
					calls += tr.ModelCalls()
					if tr.Reward != 1 {
						t.Errorf("task %s sample %d: reward %v, failure %q, error %q", tr.TaskID, tr.Sample, tr.Reward, tr.Failure, tr.Error)
					}
				}
				if len(ts) != 2*len(tasks) || book.choices != calls || book.calls >= calls {
					t.Errorf("%d trajectories of %d model calls; the server answered %d calls of %d choices in all: want 2 per task, every model call one choice, and fewer HTTP calls than choices",
						len(ts), calls, book.calls, book.choices)
				}
			})
		}
	}
}
