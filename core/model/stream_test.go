package model

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"whale/core/policy"
	"whale/kernels"
)

// aloneCompletions samples each request by itself on a fresh sampler: the
// reference every streamed completion must match bit for bit.
func aloneCompletions(t *testing.T, m *Model, reqs []Request) []Completion {
	t.Helper()
	out := make([]Completion, len(reqs))
	for i, r := range reqs {
		out[i] = generate(t, NewSampler(m, SamplerOptions{PrefixCacheBytes: -1}), r)[0]
	}
	return out
}

func openStream(t *testing.T, s *Sampler) *Stream {
	t.Helper()
	st, err := s.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func submit(t *testing.T, st *Stream, id int, r Request) {
	t.Helper()
	if err := st.Submit(id, r); err != nil {
		t.Fatal(err)
	}
}

func next(t *testing.T, st *Stream) Result {
	t.Helper()
	res, err := st.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Requests submitted while others decode, into at most four slots, sample
// exactly what each samples alone, come back in finishing order, and never
// hold more than four caches at once, on packed weights and (in blocks
// of rowChunk rows) on unpacked ones.
func TestStreamedRequestsSampleWhatTheySampleAlone(t *testing.T) {
	t.Run("packed", func(t *testing.T) { testStreamedAlone(t, sampleModel(t)) })
	t.Run("unpacked", func(t *testing.T) { testStreamedAlone(t, tinyModelOn(t, noPack{kernels.NewCPU()})) })
}

func testStreamedAlone(t *testing.T, m *Model) {
	reqs := mixedRequests(m.d.V)
	want := aloneCompletions(t, m, reqs)
	st := openStream(t, NewSampler(m, SamplerOptions{MaxBatch: 4}))
	defer st.Close()
	sent := 0
	for ; sent < 5; sent++ {
		submit(t, st, sent, reqs[sent])
	}
	var order []int
	for len(order) < len(reqs) {
		res := next(t, st)
		if len(st.live) > 4 {
			t.Fatalf("%d sequences running with MaxBatch 4", len(st.live))
		}
		if !sameCompletion(res.Completion, want[res.ID]) {
			t.Fatalf("request %d: streamed %v %v, alone %v %v", res.ID, res.Completion.Tokens, res.Completion.LogProbs, want[res.ID].Tokens, want[res.ID].LogProbs)
		}
		order = append(order, res.ID)
		if sent < len(reqs) {
			submit(t, st, sent, reqs[sent])
			sent++
		}
	}
	if slices.IsSorted(order) {
		t.Fatalf("completions came back in submission order %v; want finishing order", order)
	}
	if ids := slices.Compact(slices.Sorted(slices.Values(order))); len(ids) != len(reqs) {
		t.Fatalf("ids handed back %v: want each of %d once", order, len(reqs))
	}
	if _, err := st.Next(context.Background()); !errors.Is(err, policy.ErrStreamIdle) {
		t.Fatalf("Next with nothing in flight: %v, want ErrStreamIdle", err)
	}
}

// A short request finishes and is handed back while a long one is still
// decoding; one submitted then joins the running batch and overtakes it.
func TestStreamHandsBackAShortRequestWhileALongOneDecodes(t *testing.T) {
	m := sampleModel(t)
	long := Request{Key: "long", Prompt: []int32{1, 2, 3, 4}, MaxNewTokens: 30, Temperature: 1, Seed: 7}
	short := Request{Key: "short", Prompt: []int32{5, 6}, MaxNewTokens: 2, Temperature: 1, Seed: 7}
	late := Request{Key: "late", Prompt: []int32{1, 2, 3, 9}, MaxNewTokens: 3, Temperature: 1, Seed: 7}
	want := aloneCompletions(t, m, []Request{long, short, late})
	st := openStream(t, NewSampler(m, SamplerOptions{}))
	defer st.Close()
	submit(t, st, 0, long)
	submit(t, st, 1, short)
	var got []Result
	got = append(got, next(t, st))
	if got[0].ID != 1 || len(st.live) != 1 || len(st.live[0].out.Tokens) >= long.MaxNewTokens {
		t.Fatalf("first result id %d with %d sequences running; want the short one (1) while the long one decodes", got[0].ID, len(st.live))
	}
	submit(t, st, 2, late)
	got = append(got, next(t, st), next(t, st))
	if got[1].ID != 2 || got[2].ID != 0 {
		t.Fatalf("then ids %d, %d; want the late short request (2) before the long one (0)", got[1].ID, got[2].ID)
	}
	for _, res := range got {
		if !sameCompletion(res.Completion, want[res.ID]) {
			t.Fatalf("request %d: streamed %v, alone %v", res.ID, res.Completion.Tokens, want[res.ID].Tokens)
		}
	}
}

// A cancelled context ends Next with the context's error and spends the
// stream; once it is closed the sampler serves the same completions as a
// fresh one.
func TestStreamNextStopsWhenTheContextEnds(t *testing.T) {
	m := sampleModel(t)
	reqs := mixedRequests(m.d.V)[:6]
	s := NewSampler(m, SamplerOptions{})
	st := openStream(t, s)
	for i, r := range reqs {
		submit(t, st, i, r)
	}
	next(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := st.Next(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after cancel: %v, want context.Canceled", err)
	}
	if err := st.Submit(9, reqs[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit on a spent stream: %v, want the cancellation again", err)
	}
	if _, err := st.Next(context.Background()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next on a spent stream: %v, want the cancellation again", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got := generate(t, s, reqs...)
	want := generate(t, NewSampler(m, SamplerOptions{}), reqs...)
	for i := range reqs {
		if !sameCompletion(got[i], want[i]) {
			t.Fatalf("request %d after a cancelled stream: %v, fresh sampler %v", i, got[i].Tokens, want[i].Tokens)
		}
	}
}

// A request the sampler cannot serve is refused at Submit with its id and
// key, and the stream goes on serving the others.
func TestStreamRefusesABadRequestNamingItsKey(t *testing.T) {
	m := sampleModel(t)
	st := openStream(t, NewSampler(m, SamplerOptions{}))
	defer st.Close()
	good := Request{Key: "good", Prompt: []int32{1, 2}, MaxNewTokens: 3}
	submit(t, st, 0, good)
	for _, bad := range []Request{
		{Key: "train/t3#1/0", MaxNewTokens: 3},
		{Key: "train/t3#1/0", Prompt: []int32{1, int32(m.d.V)}, MaxNewTokens: 3},
		{Key: "train/t3#1/0", Prompt: []int32{1}, MaxNewTokens: 0},
	} {
		err := st.Submit(5, bad)
		if err == nil || !strings.Contains(err.Error(), `request 5 (key "train/t3#1/0")`) || !strings.HasPrefix(err.Error(), "model: ") {
			t.Fatalf("bad request %+v: error %v; want one naming request 5 and its key", bad, err)
		}
	}
	if res := next(t, st); res.ID != 0 || !sameCompletion(res.Completion, aloneCompletions(t, m, []Request{good})[0]) {
		t.Fatalf("after refusals got id %d %v", res.ID, res.Completion.Tokens)
	}
	if _, err := st.Next(context.Background()); !errors.Is(err, policy.ErrStreamIdle) {
		t.Fatalf("refused requests are in flight: Next gave %v", err)
	}
}

// A Sampler serves one stream at a time: a second stream or a Generate
// call is refused until the first is closed, and a closed stream refuses
// work.
func TestSamplerServesOneStreamAtATime(t *testing.T) {
	m := sampleModel(t)
	s := NewSampler(m, SamplerOptions{})
	st := openStream(t, s)
	req := Request{Key: "k", Prompt: []int32{1, 2}, MaxNewTokens: 4, Temperature: 1}
	submit(t, st, 0, req)
	if _, err := s.OpenStream(); err == nil {
		t.Fatal("a second stream opened while one is open")
	}
	if _, err := s.Generate(context.Background(), []Request{req}); err == nil {
		t.Fatal("Generate ran while a stream is open")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := st.Submit(1, req); err == nil {
		t.Fatal("a closed stream took a request")
	}
	if _, err := st.Next(context.Background()); err == nil || errors.Is(err, policy.ErrStreamIdle) {
		t.Fatalf("Next on a closed stream: %v, want an error saying it is closed", err)
	}
	generate(t, s, req)
}

// Weights that change under an open stream would leave its caches stale:
// Next refuses to go on.
func TestStreamRefusesWeightsChangedWhileOpen(t *testing.T) {
	m := sampleModel(t)
	st := openStream(t, NewSampler(m, SamplerOptions{}))
	defer st.Close()
	submit(t, st, 0, Request{Key: "k", Prompt: []int32{1, 2}, MaxNewTokens: 4})
	if err := m.SetParamValues(m.ParamValues()); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(context.Background()); err == nil || !strings.Contains(err.Error(), "weights changed") {
		t.Fatalf("Next after a weight change: %v", err)
	}
}

// TestLanesGiveTheirThreadsBack: the lanes of OpenLanes share the kernel
// threads while they are open, and each stream that closes gives its share
// to the lanes still open, so the last lane of a run decodes on all of them.
func TestLanesGiveTheirThreadsBack(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(6)
	s := NewSampler(sampleModel(t), SamplerOptions{MaxBatch: 6})
	sts, err := s.OpenLanes(3)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{2, 3, 6} {
		if got := kernels.Threads(); got != want {
			t.Fatalf("%d of 3 lanes closed: Threads() = %d, want %d", i, got, want)
		}
		sts[i].Close()
		sts[i].Close() // a second Close gives nothing back again
	}
	if got := kernels.Threads(); got != 6 {
		t.Fatalf("every lane closed: Threads() = %d, want 6", got)
	}
}

// OpenLanes over three lanes: the lanes decode at the same time from
// their own goroutines and sample what each request samples alone, on the
// sampler's packed weights (they make no copy of their own); they keep
// their caches between calls, follow new weights, decode at most their
// share of the width, and ReleaseCaches empties every lane's caches.
func TestLanesKeepTheirCaches(t *testing.T) {
	m := sampleModel(t)
	reqs := mixedRequests(m.d.V)
	s := NewSampler(m, SamplerOptions{MaxBatch: 6})
	for round := range 2 {
		want := aloneCompletions(t, m, reqs)
		sts, err := s.OpenLanes(3)
		if err != nil {
			t.Fatal(err)
		}
		if len(sts) != 3 || sts[1].maxBatch != 2 {
			t.Fatalf("OpenLanes(3) over a width of 6: %d lanes of width %d, want 3 of 2", len(sts), sts[1].maxBatch)
		}
		got := make([]Completion, len(reqs))
		var wg sync.WaitGroup
		for lane, st := range sts {
			wg.Go(func() {
				defer st.Close()
				for i := lane; i < len(reqs); i += len(sts) {
					if err := st.Submit(i, reqs[i]); err != nil {
						t.Error(err)
						return
					}
				}
				for {
					res, err := st.Next(context.Background())
					if errors.Is(err, policy.ErrStreamIdle) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					got[res.ID] = res.Completion
				}
			})
		}
		wg.Wait()
		for i := range reqs {
			if !slices.Equal(got[i].Tokens, want[i].Tokens) || !slices.Equal(got[i].LogProbs, want[i].LogProbs) {
				t.Fatalf("round %d, request %d: the lanes sampled %v, alone %v", round, i, got[i].Tokens, want[i].Tokens)
			}
		}
		for i, l := range s.lanes {
			if l.pk != s.pk || l.pk == nil {
				t.Fatalf("lane %d reads its own copy of the weights", i+1)
			}
		}
		// New weights: the lanes must sample from them in the next round.
		w, _ := m.ReadParam("model.layers.0.input_layernorm.weight")
		for i := range w {
			w[i] *= 1.5
		}
		if err := m.WriteParam("model.layers.0.input_layernorm.weight", w); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.lanes[1].Stats(); len(s.lanes) != 2 || st.CachedPrefixes+int(st.PoolBytes) == 0 {
		t.Fatalf("%d lanes kept; the last one keeps %d prefixes and %d pool bytes, want some", len(s.lanes), st.CachedPrefixes, st.PoolBytes)
	}
	if err := s.ReleaseCaches(); err != nil {
		t.Fatal(err)
	}
	for i, l := range append([]*Sampler{s}, s.lanes...) {
		if st := l.Stats(); st.CachedPrefixes != 0 || st.PoolBytes != 0 {
			t.Fatalf("sampler %d after ReleaseCaches: %d prefixes, %d pool bytes", i, st.CachedPrefixes, st.PoolBytes)
		}
	}
}
