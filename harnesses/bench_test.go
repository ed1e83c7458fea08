package harnesses

import (
	"context"
	"testing"
	"time"

	"whale/core/policy"
)

// instant answers every request at once: a tool call on an episode's first
// call, the answer after, so that a benchmark measures the runtime alone.
type instant struct {
	answers map[string]string
	calls   int
}

func (p *instant) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	out := make([]policy.Completion, len(reqs))
	for i, r := range reqs {
		p.calls++
		text := "<tool>calc: 2 + 3</tool>"
		if r.Key[len(r.Key)-2:] != "/0" {
			text = "The sum is <answer>" + p.answers[r.Key[:len(r.Key)-4]] + "</answer>"
		}
		out[i] = policy.Completion{Text: text, Finish: policy.FinishStop}
	}
	return out, nil
}

// BenchmarkRunOverhead measures the harness runtime per policy call (prompt
// rendering, context fitting, the Starlark hooks, parsing, validation and
// bookkeeping) with a policy that answers instantly, on the math h0 with a
// tool call and an answer per episode. The figure to compare with one
// model call is ns/call.
func BenchmarkRunOverhead(b *testing.B) {
	d := &fakeDomain{name: "math", turns: 3}
	h := loadBuiltin(b, d)
	tasks := d.make(64)
	answers := map[string]string{}
	for _, t := range tasks {
		answers[t.ID] = t.Answer
	}
	b.ResetTimer()
	start := time.Now()
	calls := 0
	for i := 0; i < b.N; i++ {
		pol := &instant{answers: answers}
		ts, err := Run(context.Background(), h, d, tasks, tokens(pol), RunOptions{Seed: uint64(i)})
		if err != nil {
			b.Fatal(err)
		}
		if ts[0].Reward != 1 {
			b.Fatalf("reward %v failure %q error %q", ts[0].Reward, ts[0].Failure, ts[0].Error)
		}
		calls += pol.calls
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(calls), "ns/call")
}
