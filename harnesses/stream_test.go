package harnesses

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"whale/core/policy"
	"whale/data"
	"whale/data/domains"
)

// shuffled makes a streaming policy of one that answers by key: each Next
// answers one request in flight chosen at random, so completions come
// back in an order that has nothing to do with submission.
type shuffled struct {
	pol    policy.Policy
	seed   uint64
	peak   int // most requests in flight at once
	opened int
	closed int
	// failSubmit and failNext, if set, make Submit refuse that key and
	// Next fail once that many completions were handed back.
	failSubmit string
	failNext   int
	// badID, if set, makes Next hand back an id never submitted.
	badID bool
	// mu guards the counters above and pol when lanes run at once
	// (OpenLanes).
	mu sync.Mutex
	// lanes is how many streams the last OpenLanes opened; split names a
	// task whose requests went to more than one of them.
	lanes  int
	laneOf map[string]*shuffledStream
	split  string
}

// OpenLanes makes shuffled a policy.Laned: n streams, each answering in
// its own random order, driven from n goroutines.
func (p *shuffled) OpenLanes(n int) ([]policy.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lanes, p.laneOf = n, map[string]*shuffledStream{}
	out := make([]policy.Stream, n)
	for i := range out {
		p.opened++
		out[i] = &shuffledStream{p: p, rng: rand.New(rand.NewPCG(p.seed, uint64(i+2)))}
	}
	return out, nil
}

func (p *shuffled) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	return p.pol.Generate(ctx, reqs)
}

// Unwrap lets Run find the oracle half of Mixed behind it, which needs
// the episode behind each request.
func (p *shuffled) Unwrap() policy.Policy { return p.pol }

func (p *shuffled) OpenStream() (policy.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.opened++
	return &shuffledStream{p: p, rng: rand.New(rand.NewPCG(p.seed, 1))}, nil
}

type shuffledStream struct {
	p      *shuffled
	rng    *rand.Rand
	ids    []int
	reqs   []policy.Request
	served int
}

// noteLane records that lane s was given request key, and names the
// key's task in split if an earlier key of it went to another lane.
func (p *shuffled) noteLane(key string, s *shuffledStream) {
	task := key[:strings.LastIndex(key, "#")]
	if p.laneOf[task] == nil {
		p.laneOf[task] = s
	} else if p.laneOf[task] != s {
		p.split = task
	}
}

func (s *shuffledStream) Submit(id int, r policy.Request) error {
	if r.Key == s.p.failSubmit {
		return errors.New("shuffled: request " + strconv.Itoa(id) + " (key " + strconv.Quote(r.Key) + "): refused")
	}
	s.ids, s.reqs = append(s.ids, id), append(s.reqs, r)
	s.p.mu.Lock()
	s.p.peak = max(s.p.peak, len(s.ids))
	if s.p.laneOf != nil {
		s.p.noteLane(r.Key, s)
	}
	s.p.mu.Unlock()
	return nil
}

func (s *shuffledStream) Next(ctx context.Context) (policy.Result, error) {
	if err := ctx.Err(); err != nil {
		return policy.Result{}, err
	}
	if len(s.ids) == 0 {
		return policy.Result{}, policy.ErrStreamIdle
	}
	if s.p.failNext > 0 && s.served == s.p.failNext {
		return policy.Result{}, errors.New("shuffled: decoder broke")
	}
	k := s.rng.IntN(len(s.ids))
	id, r := s.ids[k], s.reqs[k]
	s.ids, s.reqs = slices.Delete(s.ids, k, k+1), slices.Delete(s.reqs, k, k+1)
	s.p.mu.Lock()
	c, err := s.p.pol.Generate(ctx, []policy.Request{r})
	s.p.mu.Unlock()
	if err != nil {
		return policy.Result{}, err
	}
	s.served++
	if s.p.badID {
		id += 1000
	}
	return policy.Result{ID: id, Completion: c[0]}, nil
}

func (s *shuffledStream) Close() error {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.p.closed++
	return nil
}

// withSamples loads d's h0 with SAMPLES set.
func withSamples(t *testing.T, d data.Domain, samples int) *Harness {
	t.Helper()
	src, err := Mutate(loadBuiltin(t, d).Source, "SAMPLES", strconv.Itoa(samples))
	if err != nil {
		t.Fatal(err)
	}
	h, err := Load(d.Name()+"/h0.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A streaming policy that hands completions back in random order gives
// the same trajectories as rounds, on every real domain, with voting, for
// any bound on the requests in flight, in one stream or in lanes
// (policy.Laned: several streams at once, one goroutine each, each
// answering in its own random order); the bound holds (each lane's share
// of it), a task's draws stay in one lane, every stream is closed,
// Progress sees every rollout finish and OnRequest sees the same
// requests.
func TestStreamingRunMatchesRoundsWithCompletionsOutOfOrder(t *testing.T) {
	for _, name := range domains.Names() {
		t.Run(name, func(t *testing.T) {
			d, err := domains.Open(name, 1)
			if err != nil {
				t.Fatal(err)
			}
			h := withSamples(t, d, 3)
			tasks, _ := d.Tasks(data.SplitVal)
			tasks = tasks[:12]
			var keys []string
			opts := RunOptions{Seed: 3, K: 2, MaxNewTokens: 48, OnRequest: func(i RequestInfo) { keys = append(keys, i.Key) }}
			want, err := Run(context.Background(), h, d, tasks, tokens(NewMixed(d, 3)), opts)
			if err != nil {
				t.Fatal(err)
			}
			wantKeys := slices.Sorted(slices.Values(keys))
			// limit: the most requests one stream may hold (12 tasks × 2
			// draws × 3 samples in all).
			for _, c := range []struct{ lanes, batch, limit int }{{1, 0, 72}, {1, 7, 6}, {1, 1, 3}, {2, 0, 36}, {3, 7, 3}, {2, 12, 6}, {4, 64, 16}} {
				keys = nil
				var progress [][2]int
				o := opts
				o.BatchSize, o.Lanes = c.batch, c.lanes
				o.Progress = func(done, total int) { progress = append(progress, [2]int{done, total}) }
				pol := &shuffled{pol: tokens(NewMixed(d, 3)), seed: uint64(c.batch)}
				got, err := Run(context.Background(), h, d, tasks, pol, o)
				what := fmt.Sprintf("%d lanes, BatchSize %d", c.lanes, c.batch)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: streamed trajectories differ from rounds", what)
				}
				if pol.peak > c.limit || pol.opened != c.lanes || pol.closed != c.lanes || (c.lanes > 1 && pol.lanes != c.lanes) {
					t.Fatalf("%s: a stream held %d requests (limit %d); %d streams opened, %d closed, OpenLanes got %d", what, pol.peak, c.limit, pol.opened, pol.closed, pol.lanes)
				}
				if pol.split != "" {
					t.Fatalf("%s: the draws of task %s went to more than one lane (they share a prompt)", what, pol.split)
				}
				if !slices.Equal(slices.Sorted(slices.Values(keys)), wantKeys) {
					t.Fatalf("%s: OnRequest saw %d keys, rounds %d", what, len(keys), len(wantKeys))
				}
				n := len(want)
				if len(progress) != n+1 || progress[0] != [2]int{0, n} || progress[n] != [2]int{n, n} {
					t.Fatalf("%s: progress %v; want 0 then each of %d rollouts finishing", what, progress, n)
				}
			}
		})
	}
}

// A stream's failures end the run with the policy's error (naming the
// refused key), and the stream is closed whatever happened.
func TestStreamingRunStopsOnPolicyErrors(t *testing.T) {
	d, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	h := loadBuiltin(t, d)
	tasks, _ := d.Tasks(data.SplitVal)
	tasks = tasks[:5]
	opts := RunOptions{Seed: 1, MaxNewTokens: 32, KeyPrefix: "val/"}
	for _, c := range []struct {
		name string
		pol  *shuffled
		want string
	}{
		{"submit", &shuffled{failSubmit: "val/" + tasks[2].ID + "#0/0"}, `harnesses: run: policy: shuffled: request 2 (key "val/` + tasks[2].ID + `#0/0"): refused`},
		{"next", &shuffled{failNext: 3}, "harnesses: run: policy: shuffled: decoder broke"},
		{"unknown id", &shuffled{badID: true}, "which is not in flight"},
	} {
		c.pol.pol = tokens(NewRandom())
		_, err := Run(context.Background(), h, d, tasks, c.pol, opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want %q", c.name, err, c.want)
		}
		if c.pol.closed != 1 {
			t.Errorf("%s: stream closed %d times", c.name, c.pol.closed)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := opts
	o.OnRequest = func(i RequestInfo) {
		if strings.HasSuffix(i.Key, "/1") {
			cancel()
		}
	}
	pol := &shuffled{pol: tokens(NewRandom())}
	if _, err := Run(ctx, h, d, tasks, pol, o); !errors.Is(err, context.Canceled) || pol.closed != 1 {
		t.Fatalf("cancelled run: error %v, stream closed %d times; want context.Canceled and closed", err, pol.closed)
	}
}

// A lane's failure ends the run with its error and stops the other lanes;
// every lane is closed, and a cancelled run says so.
func TestLanesStopOnALanesError(t *testing.T) {
	d, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	h := loadBuiltin(t, d)
	tasks, _ := d.Tasks(data.SplitVal)
	tasks = tasks[:16]
	opts := RunOptions{Seed: 1, MaxNewTokens: 32, KeyPrefix: "val/", K: 2, Lanes: 3, BatchSize: 12}
	for _, c := range []struct {
		name string
		pol  *shuffled
		want string
	}{
		{"submit", &shuffled{failSubmit: "val/" + tasks[9].ID + "#1/0"}, `(key "val/` + tasks[9].ID + `#1/0"): refused`},
		{"next", &shuffled{failNext: 2}, "harnesses: run: policy: shuffled: decoder broke"},
	} {
		c.pol.pol = tokens(NewRandom())
		_, err := Run(context.Background(), h, d, tasks, c.pol, opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want %q", c.name, err, c.want)
		}
		if c.pol.closed != 3 {
			t.Errorf("%s: %d of 3 lanes closed", c.name, c.pol.closed)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := opts
	o.OnRequest = func(i RequestInfo) {
		if strings.Contains(i.Key, tasks[5].ID) {
			cancel()
		}
	}
	pol := &shuffled{pol: tokens(NewRandom())}
	if _, err := Run(ctx, h, d, tasks, pol, o); !errors.Is(err, context.Canceled) || pol.closed != 3 {
		t.Fatalf("cancelled run: error %v, %d of 3 lanes closed; want context.Canceled and all closed", err, pol.closed)
	}
}
