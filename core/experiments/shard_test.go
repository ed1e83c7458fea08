package experiments

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"whale/core/experiments/report"
)

// Three writers of one record — each with its own Record, as three
// processes of a sharded bench have — putting rows at once lose none:
// the file ends with every row, once, sorted.
func TestThreeWritersOfOneRecordLoseNoRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared", RecordFile)
	const writers, each = 3, 12
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := OpenRecord(path)
			if err != nil {
				errs[w] = err
				return
			}
			for i := range each {
				row := RecordRow{Run: report.Run{Condition: report.WeightOnly, Domain: "math", Seed: uint64(w), RunID: fmt.Sprintf("w%d-r%02d", w, i),
					Done: true, BestTestMean8: 0.5, TestCI95: [2]float64{0.4, 0.6}}, Config: json.RawMessage(`{"budget":48}`)}
				if err := rec.Put(row); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rec, err := OpenRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != writers*each || !slices.IsSorted(lines) {
		t.Fatalf("the record holds %d lines (sorted: %v), want %d", len(lines), slices.IsSorted(lines), writers*each)
	}
	for w := range writers {
		for i := range each {
			if id := fmt.Sprintf("w%d-r%02d", w, i); !rec.Has(id) {
				t.Errorf("run %s is lost", id)
			}
		}
	}
}

// Shards deal every job to exactly one shard, keep a run's jobs together
// and put each vote-only job with its seed-matched harness-only runs.
func TestShardsDealEveryJobOnceAndKeepVotesWithTheirHarnessRuns(t *testing.T) {
	p := Plan{Domains: []string{"math", "searchqa"}, Seeds: 3, Preset: "tiny", TrainCalls: 16, SearchCalls: 16, FastSlowE: 0.1, DataSeed: 1, Prefix: "bench"}
	jobs, err := p.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	where := map[int]int{} // job index → shard
	shardOf := map[string]int{}
	for i := range n {
		for _, j := range (Shard{i, n}).Of(jobs) {
			k := slices.IndexFunc(jobs, func(o Job) bool { return o.ID == j.ID && o.Accounting == j.Accounting && o.Condition == j.Condition })
			if _, dup := where[k]; dup {
				t.Fatalf("job %s in two shards", j.ID)
			}
			where[k] = i
			if s, ok := shardOf[j.ID]; ok && s != i && j.Condition != report.VoteOnly {
				t.Errorf("run %s split over shards %d and %d", j.ID, s, i)
			}
			shardOf[j.ID] = i
		}
	}
	if len(where) != len(jobs) {
		t.Fatalf("%d of %d jobs dealt", len(where), len(jobs))
	}
	used := map[int]bool{}
	for k, j := range jobs {
		used[where[k]] = true
		if j.Condition != report.VoteOnly {
			continue
		}
		for k2, o := range jobs {
			if o.Condition == report.HarnessOnly && o.Domain == j.Domain && o.Seed == j.Seed && where[k2] != where[k] {
				t.Errorf("vote-only %s/%d in shard %d, its harness-only run in %d", j.Domain, j.Seed, where[k], where[k2])
			}
		}
	}
	if len(used) != n {
		t.Errorf("jobs went to %d of %d shards", len(used), n)
	}
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("2/3"); err != nil || s != (Shard{2, 3}) {
		t.Fatalf("2/3: %v %v", s, err)
	}
	for _, bad := range []string{"3/3", "-1/3", "1/0", "1", "a/b", "1/3/4"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
