package harnesses_test

// Tests and benchmarks of the runtime with the real model. They live in an
// external test package: the embedded base model is made by core/pretrain,
// which imports harnesses.

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"whale/core/basemodel"
	"whale/core/chat"
	"whale/core/model"
	"whale/core/policy"
	"whale/data"
	"whale/data/domains"
	"whale/harnesses"
	"whale/internal/longtests"
	"whale/kernels"
)

// rounds hides the local policy's streaming, so Run drives it round by
// round.
type rounds struct{ policy.Policy }

// local is the base model's chat policy on a sampler with opts.
func local(t testing.TB, m *model.Model, opts model.SamplerOptions) *chat.Local {
	t.Helper()
	l, err := chat.NewLocal(m, basemodel.Tokenizer(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func baseModel(t testing.TB) *model.Model {
	t.Helper()
	m, err := basemodel.Load(kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// h0With loads d's h0 with knobs set.
func h0With(t testing.TB, d data.Domain, knobs map[string]string) *harnesses.Harness {
	t.Helper()
	src, err := harnesses.Builtin(d.Name(), "h0")
	if err != nil {
		t.Fatal(err)
	}
	if src, err = harnesses.MutateAll(src, knobs); err != nil {
		t.Fatal(err)
	}
	h, err := harnesses.Load(d.Name()+"/h0.star", src, harnesses.EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Continuous batching changes when a completion is computed and what
// shares its batch, never what it is: the base model sampling at
// temperature 1 through h0 of every domain, with K = 2 and SAMPLES = 2,
// gives bit-identical trajectories (tokens, log-probabilities, rewards,
// transcripts) streamed into free slots — on a fresh sampler, on one whose
// prefix cache the round-based run filled, and three sequences at a time —
// as round by round. searchqa gets a third turn so that the model answers
// after its own search. Under -short (the race pass) only searchqa runs.
func TestStreamingRunIsBitIdenticalToRoundsOnTheBaseModel(t *testing.T) {
	m := baseModel(t)
	n, names := 4, domains.Names()
	if longtests.Short() {
		// The race pass: one domain, multi-turn and voting.
		n, names = 2, []string{"searchqa"}
	}
	multi := 0 // rollouts that called the model again after a first call
	defer func() {
		if !t.Failed() && multi == 0 {
			t.Error("no rollout made a second call: the workload is not multi-turn")
		}
	}()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			d, err := domains.Open(name, 1)
			if err != nil {
				t.Fatal(err)
			}
			knobs := map[string]string{"SAMPLES": "2"}
			if name == "searchqa" {
				knobs["MAX_TURNS"] = "3"
			}
			h := h0With(t, d, knobs)
			tasks, err := d.Tasks(data.SplitVal)
			if err != nil {
				t.Fatal(err)
			}
			tasks = tasks[:n]
			opts := harnesses.RunOptions{Seed: 11, K: 2, Temperature: 1, MaxNewTokens: 40, KeyPrefix: "val/"}
			warm := local(t, m, model.SamplerOptions{})
			want, err := harnesses.Run(context.Background(), h, d, tasks, rounds{warm}, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range want {
				if tr.ModelCalls() > 2 {
					multi++
				}
			}
			for _, c := range []struct {
				name  string
				s     *chat.Local
				batch int
			}{{"fresh sampler, all in flight", local(t, m, model.SamplerOptions{}), 0},
				{"warm prefix cache, 5 in flight", warm, 5},
				{"3 decoding at once", local(t, m, model.SamplerOptions{MaxBatch: 3}), 0}} {
				o := opts
				o.BatchSize = c.batch
				got, err := harnesses.Run(context.Background(), h, d, tasks, c.s, o)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: trajectories differ from rounds: %s", c.name, firstDifference(got, want))
				}
			}
		})
	}
}

// BenchmarkContinuousBatching compares round-based and streamed rollouts
// of the base model through searchqa on 64 validation tasks, as the
// engine runs them (all requests at once, the sampler's default of 64
// decoding together): h0 as it is, where this model mostly answers at its
// first call after the harness's own retrieval, and h0 with MAX_TURNS=4,
// where it searches itself and answers after (several calls an episode:
// the multi-turn case continuous batching is for). The figure to compare
// is episodes/s; calls/episode says how multi-turn the workload was.
func BenchmarkContinuousBatching(b *testing.B) {
	m := baseModel(b)
	d, err := domains.Open("searchqa", 1)
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := d.Tasks(data.SplitVal)
	if err != nil {
		b.Fatal(err)
	}
	tasks = tasks[:64]
	opts := harnesses.RunOptions{Seed: 1, Temperature: 1, MaxNewTokens: 128}
	for _, w := range []struct {
		name  string
		knobs map[string]string
	}{{"h0", nil}, {"h0-4turns", map[string]string{"MAX_TURNS": "4"}}} {
		h := h0With(b, d, w.knobs)
		for _, mode := range []string{"rounds", "stream"} {
			b.Run(w.name+"/"+mode, func(b *testing.B) {
				episodes, calls, toks := 0, 0, 0
				var prefilled int64
				start := time.Now()
				for i := 0; i < b.N; i++ {
					// A fresh sampler each time: no prefix cache carried over.
					s := local(b, m, model.SamplerOptions{})
					var pol policy.Policy = s
					if mode == "rounds" {
						pol = rounds{s}
					}
					ts, err := harnesses.Run(context.Background(), h, d, tasks, pol, opts)
					if err != nil {
						b.Fatal(err)
					}
					episodes += len(ts)
					prefilled += s.Sampler().Stats().PrefillTokens
					for _, tr := range ts {
						calls += tr.ModelCalls()
						for _, c := range tr.Calls {
							toks += len(c.Completion)
						}
					}
				}
				sec := time.Since(start).Seconds()
				b.ReportMetric(float64(episodes)/sec, "episodes/s")
				b.ReportMetric(float64(calls)/float64(episodes), "calls/episode")
				b.ReportMetric(float64(toks)/sec, "tokens/s")
				// Prompt tokens computed, not copied from a cached prefix:
				// streaming must not lose reuse.
				b.ReportMetric(float64(prefilled)/float64(episodes), "prefilled/episode")
			})
		}
	}
}

// firstDifference names the first call (or, failing that, rollout) where
// two runs part.
func firstDifference(got, want []harnesses.Trajectory) string {
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		for j := range min(len(g.Calls), len(w.Calls)) {
			if !reflect.DeepEqual(g.Calls[j], w.Calls[j]) {
				return fmt.Sprintf("call %s: streamed %q (%s, log-probs %v), rounds %q (%s, log-probs %v)", w.Calls[j].Key,
					g.Calls[j].Text, g.Calls[j].Finish, g.Calls[j].LogProbs, w.Calls[j].Text, w.Calls[j].Finish, w.Calls[j].LogProbs)
			}
		}
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("rollout %s#%d: %d calls, reward %v streamed; %d calls, reward %v in rounds", w.TaskID, w.Sample, len(g.Calls), g.Reward, len(w.Calls), w.Reward)
		}
	}
	return fmt.Sprintf("%d rollouts streamed, %d in rounds", len(got), len(want))
}

// Passes decode several single-sample runs together without changing a
// draw: the base model sampling at temperature 1 through h0 of math
// (multi-turn with its calculator), with two passes in one call, gives
// each rollout the trajectory (keys, tokens, log-probabilities, rewards)
// of the run of K = 1 under its pass's key prefix, task by task and the
// passes in order; on a streaming sampler and round by round.
func TestPassesDrawWhatEachPassDrawsAlone(t *testing.T) {
	m := baseModel(t)
	d, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	h := h0With(t, d, nil)
	tasks, err := d.Tasks(data.SplitVal)
	if err != nil {
		t.Fatal(err)
	}
	tasks = tasks[:3]
	prefixes := []string{"score/w/0/", "score/w/1/"}
	opts := harnesses.RunOptions{Seed: 5, Temperature: 1, MaxNewTokens: 40}
	var alone [][]harnesses.Trajectory
	for _, p := range prefixes {
		o := opts
		o.KeyPrefix = p
		ts, err := harnesses.Run(context.Background(), h, d, tasks, local(t, m, model.SamplerOptions{}), o)
		if err != nil {
			t.Fatal(err)
		}
		alone = append(alone, ts)
	}
	if reflect.DeepEqual(alone[0], alone[1]) {
		t.Fatal("the two passes drew the same trajectories: the test cannot tell them apart")
	}
	for _, c := range []struct {
		name string
		pol  policy.Policy
	}{{"streamed", local(t, m, model.SamplerOptions{})}, {"rounds", rounds{local(t, m, model.SamplerOptions{})}}} {
		o := opts
		o.Passes = prefixes
		got, err := harnesses.Run(context.Background(), h, d, tasks, c.pol, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tasks)*len(prefixes) {
			t.Fatalf("%s: %d trajectories, want %d", c.name, len(got), len(tasks)*len(prefixes))
		}
		for i, tr := range got {
			want := alone[i%len(prefixes)][i/len(prefixes)]
			if !reflect.DeepEqual(tr, want) {
				t.Fatalf("%s: task %d pass %d differs from the pass run alone: %s", c.name, i/len(prefixes), i%len(prefixes), firstDifference([]harnesses.Trajectory{tr}, []harnesses.Trajectory{want}))
			}
		}
	}
}
