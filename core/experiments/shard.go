package experiments

import (
	"fmt"
	"strconv"
	"strings"

	"whale/core/experiments/report"
)

// Shard is one of N shares of a bench's jobs: a cluster runs each share
// in a process of its own (a Kubernetes Indexed Job's index, a Slurm
// array task), every one appending its finished runs to the record in a
// folder they share, and a last run of the whole bench reads them there
// and writes the report.
type Shard struct{ I, N int }

// ParseShard reads "I/N" (0 ≤ I < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("shard %q: want I/N with 0 ≤ I < N, e.g. 0/3 (a Job's JOB_COMPLETION_INDEX, a Slurm array's SLURM_ARRAY_TASK_ID)", s)
	}
	return Shard{i, n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Of returns the shard's jobs, in plan order. Jobs are dealt to shards
// round-robin by unit in plan order: a run (jobs sharing a run id stay
// together) is a unit, except that every harness-only and vote-only job
// of one domain and seed form one unit, since a vote-only run takes its
// k from its seed-matched harness-only run (Job.resolveVote) and so must
// run where that run does. Every job is in exactly one shard.
func (s Shard) Of(jobs []Job) []Job {
	unitOf := map[string]int{}
	var out []Job
	for _, j := range jobs {
		key := "run/" + j.ID
		if j.Condition == report.HarnessOnly || j.Condition == report.VoteOnly {
			key = fmt.Sprintf("vote/%s/%d", j.Domain, j.Seed)
		}
		u, ok := unitOf[key]
		if !ok {
			u = len(unitOf)
			unitOf[key] = u
		}
		if u%s.N == s.I {
			out = append(out, j)
		}
	}
	return out
}
