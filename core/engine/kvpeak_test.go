package engine

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/model"
	"whale/core/store"
	"whale/data/domains"
	"whale/internal/longtests"
	"whale/kernels"
)

// TestSmallRunKVBoundsFollowTheRun (WHALE_LONG_TESTS=1, about 2.5 minutes
// a setting on two cores) runs the first 120 s of the rollout workload
// (experiments.RolloutWorkload: the small preset cut to one cycle, math,
// the embedded model) with float32 and with bfloat16 KV caches, and
// checks that the local sampler's prefix cache and pool of freed caches
// were sized by kvbudget.go's rule from what the run held live, and hold
// no more than their bounds. It logs the figures docs/PERFORMANCE.md
// quotes.
func TestSmallRunKVBoundsFollowTheRun(t *testing.T) {
	longtests.Skip(t, "about 5 minutes")
	for _, kvBF16 := range []bool{false, true} {
		cfg, err := Preset("small", "math")
		if err != nil {
			t.Fatal(err)
		}
		// experiments.RolloutWorkload's settings (that package imports
		// this one).
		cfg.MaxRounds, cfg.E, cfg.I = 1, 0.125, 2
		cfg.Candidates, cfg.LR, cfg.KL, cfg.Budget = 3, 1e-4, 0, 8192
		cfg.TrainCalls, cfg.SearchCalls, cfg.HarnessPasses, cfg.HarnessCalls, cfg.TestTasks = 0, 0, 0, 640, 64
		cfg.SampleKVBF16 = kvBF16
		dom, err := domains.Open("math", 1)
		if err != nil {
			t.Fatal(err)
		}
		m, err := bundle.Embedded(kernels.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(filepath.Join(t.TempDir(), "kv.db"), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		e, err := New(cfg, Env{Domain: dom, Bundle: m, Store: db}, "kv-bounds")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		if _, err := e.Run(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		cancel()
		db.Close()
		st := e.pol.(*chat.Local).Sampler().Stats()
		t.Logf("sample_kv_bf16 %v: in 120 s %d tokens sampled, %d prompt tokens computed", kvBF16, st.SampledTokens, st.PrefillTokens)
		t.Logf("sample_kv_bf16 %v: live KV peak %.1f MiB (largest sequence %.2f MiB); prefix cache %.1f of %.1f MiB; pool %.1f of %.1f MiB; %d of %d prompt tokens reused",
			kvBF16, mib(st.LiveKVPeak), mib(st.SeqKVPeak), mib(st.PrefixBytes), mib(st.PrefixBudget), mib(st.PoolBytes), mib(st.PoolBudget), st.ReusedTokens, st.PromptTokens)
		if st.LiveKVPeak == 0 || st.PrefixBudget != model.PrefixBudgetFor(st.LiveKVPeak) || st.PoolBudget != model.PoolBudgetFor(st.SeqKVPeak) {
			t.Errorf("bounds %d and %d do not follow the peaks %d and %d", st.PrefixBudget, st.PoolBudget, st.LiveKVPeak, st.SeqKVPeak)
		}
		if st.PrefixBytes > st.PrefixBudget || st.PoolBytes > st.PoolBudget {
			t.Errorf("the prefix cache holds %d bytes of %d, the pool %d of %d", st.PrefixBytes, st.PrefixBudget, st.PoolBytes, st.PoolBudget)
		}
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
