package chat

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"whale/core/model"
	"whale/core/model/modeltest"
	"whale/core/policy"
	"whale/core/tokenizer"
	"whale/kernels"
)

// tinyModel is a random-weight model over the byte tokenizer's vocabulary
// (padded, as models' vocabularies are).
func tinyModel(t *testing.T) *model.Model {
	t.Helper()
	return modeltest.New(t, 3)
}

func newLocal(t *testing.T, m *model.Model) *Local {
	t.Helper()
	l, err := NewLocal(m, tokenizer.Bytes{}, model.SamplerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// chats are the requests the golden tests ask: a chat that fits, one that
// needs messages dropped and one that needs a cut as well.
func chats() []policy.Request {
	long := []policy.Message{{Role: "system", Content: "Answer in <answer> tags."}, {Role: "user", Content: "What is 4 plus 9?"},
		{Role: "assistant", Content: "<tool>calc: 4 + 9</tool> " + strings.Repeat("thinking ", 12)},
		{Role: "tool", Content: "calc result: 13"}, {Role: "assistant", Content: strings.Repeat("so ", 30)}}
	var rs []policy.Request
	for i, budget := range []int{0, 2048, 150, 90} {
		rs = append(rs, policy.Request{Key: fmt.Sprintf("k%d", i), Messages: long, ContextTokens: budget, MaxNewTokens: 12, Temperature: 1, Seed: 5})
	}
	rs = append(rs, policy.Request{Key: "short", Messages: []policy.Message{{Role: "user", Content: "2 + 2"}}, MaxNewTokens: 6, Seed: 5})
	return rs
}

// The local policy sends the model exactly what the harness runtime sent
// it before policies became chat-level — tokenizer.EncodeChat of the chat,
// fitted by the old fitContext — and hands back exactly what the sampler
// samples for that prompt, with the end-of-turn token as the one stop,
// the text decoded without it.
func TestLocalIsTheSamplerOnTheOldPrompt(t *testing.T) {
	m := tinyModel(t)
	tok := tokenizer.Bytes{}
	reqs := chats()
	got, err := newLocal(t, m).Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	sawDrop, sawCut := false, false
	for i, r := range reqs {
		budget := r.ContextTokens
		if budget == 0 {
			budget = 1 << 30
		}
		prompt, dropped, cut, err := legacyFit(tok, toTokenizer(r.Messages), budget)
		if err != nil {
			t.Fatal(err)
		}
		want, err := model.NewSampler(m, model.SamplerOptions{}).Generate(context.Background(), []model.Request{{Key: r.Key, Prompt: prompt,
			MaxNewTokens: r.MaxNewTokens, Temperature: r.Temperature, Stop: []int32{tokenizer.BytesImEnd}, Seed: r.Seed}})
		if err != nil {
			t.Fatal(err)
		}
		w, g := want[0], got[i]
		text := tok.Decode(w.Tokens)
		if w.Finish == policy.FinishStop {
			text = tok.Decode(w.Tokens[:len(w.Tokens)-1])
		}
		if !slices.Equal(g.Prompt, prompt) || g.Dropped != dropped || g.Cut != cut {
			t.Fatalf("request %s: prompt of %d tokens, dropped %d, cut %v; the old runtime sent %d, dropped %d, cut %v", r.Key, len(g.Prompt), g.Dropped, g.Cut, len(prompt), dropped, cut)
		}
		if !slices.Equal(g.Tokens, w.Tokens) || !slices.Equal(g.LogProbs, w.LogProbs) || g.Finish != w.Finish || g.Text != text {
			t.Fatalf("request %s: completion %v %v %s %q; the sampler's %v %v %s %q", r.Key, g.Tokens, g.LogProbs, g.Finish, g.Text, w.Tokens, w.LogProbs, w.Finish, text)
		}
		sawDrop, sawCut = sawDrop || dropped > 0, sawCut || cut
	}
	if !sawDrop || !sawCut {
		t.Fatal("the chats do not exercise dropping and cutting")
	}
}

// Streamed in any order and at any time, requests get what Generate gives
// them; a chat that cannot fit its budget comes back as FinishPrompt
// without stopping anything; a request with no chat, or a role the
// template does not know, is refused naming its id and key, and the
// stream goes on.
func TestLocalStreamMatchesGenerate(t *testing.T) {
	m := tinyModel(t)
	reqs := chats()
	reqs = append(reqs, policy.Request{Key: "tight", Messages: reqs[0].Messages, ContextTokens: 5, MaxNewTokens: 4})
	want, err := newLocal(t, m).Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if f := want[len(reqs)-1]; f.Finish != policy.FinishPrompt || !strings.Contains(f.Error, "cannot hold") || f.Tokens != nil {
		t.Fatalf("a chat over any cut's reach: %+v", f)
	}
	st, err := newLocal(t, m).OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := make([]policy.Completion, len(reqs))
	for _, bad := range []policy.Request{{Key: "empty", MaxNewTokens: 3}, {Key: "role", Messages: []policy.Message{{Role: "narrator", Content: "x"}}, MaxNewTokens: 3}} {
		if err := st.Submit(99, bad); err == nil || !strings.Contains(err.Error(), `request 99 (key "`+bad.Key+`")`) {
			t.Fatalf("request %q: error %v, want a refusal naming id and key", bad.Key, err)
		}
	}
	// Submit the second half while the first decodes.
	order := []int{5, 3, 1}
	for _, i := range order {
		if err := st.Submit(i, reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := st.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got[res.ID] = res.Completion
	for _, i := range []int{0, 4, 2} {
		if err := st.Submit(i, reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	for range len(reqs) - 1 {
		res, err := st.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got[res.ID] = res.Completion
	}
	if _, err := st.Next(context.Background()); !errors.Is(err, policy.ErrStreamIdle) {
		t.Fatalf("an empty stream: %v, want ErrStreamIdle", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("streamed completions differ from Generate's")
	}
	st.Close()
	if err := st.Submit(0, reqs[0]); err == nil {
		t.Fatal("a closed stream took a request")
	}
}

func TestNewLocalRefusesAForeignTokenizer(t *testing.T) {
	q, err := loadQwen()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal(tinyModel(t), q, model.SamplerOptions{}); err == nil || !strings.Contains(err.Error(), "not this model's tokenizer") {
		t.Fatalf("a 151k-token tokenizer on a 264-token model: %v", err)
	}
}

// Lanes (OpenLanes) driven from goroutines at once give every request
// what Generate gives it, with the kernels' threads shared out while they
// are open and given back when the last closes; the lanes follow the
// model's weights when they change and never outnumber the sampler's
// width (core/model's TestLanesKeepTheirCaches has the rest).
func TestLocalLanesMatchGenerate(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(4)
	m := tinyModel(t)
	var reqs []policy.Request
	for round := range 3 {
		for _, r := range chats() {
			r.Key = fmt.Sprintf("%s/%d", r.Key, round)
			reqs = append(reqs, r)
		}
	}
	l, err := NewLocal(m, tokenizer.Bytes{}, model.SamplerOptions{MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	run := func(n int) []policy.Completion {
		t.Helper()
		sts, err := l.OpenLanes(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(sts) != min(n, 4) {
			t.Fatalf("OpenLanes(%d) over a width of 4 opened %d lanes", n, len(sts))
		}
		if _, err := l.OpenStream(); err == nil {
			t.Fatal("a stream opened while the lanes were open")
		}
		if want := max(1, 4/len(sts)); kernels.Threads() != want {
			t.Fatalf("%d lanes open on 4 threads: each gets %d, want %d", len(sts), kernels.Threads(), want)
		}
		got := make([]policy.Completion, len(reqs))
		var wg sync.WaitGroup
		errs := make([]error, len(sts))
		for lane, st := range sts {
			wg.Go(func() {
				defer st.Close()
				for i := lane; i < len(reqs); i += len(sts) {
					if errs[lane] = st.Submit(i, reqs[i]); errs[lane] != nil {
						return
					}
				}
				for {
					res, err := st.Next(context.Background())
					if errors.Is(err, policy.ErrStreamIdle) {
						return
					}
					if err != nil {
						errs[lane] = err
						return
					}
					got[res.ID] = res.Completion
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if kernels.Threads() != 4 {
			t.Fatalf("every lane closed: %d threads, want 4 again", kernels.Threads())
		}
		return got
	}
	for _, n := range []int{3, 2, 9} {
		want, err := newLocal(t, m).Generate(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		if got := run(n); !reflect.DeepEqual(got, want) {
			t.Fatalf("%d lanes: completions differ from Generate's", n)
		}
		// New weights: the lanes must sample from them next time.
		w, _ := m.ReadParam("model.layers.0.input_layernorm.weight")
		for i := range w {
			w[i] *= 1.5
		}
		if err := m.WriteParam("model.layers.0.input_layernorm.weight", w); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.ReleaseCaches(); err != nil {
		t.Fatal(err)
	}
}
