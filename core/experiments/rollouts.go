package experiments

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"whale/core/bundle"
	"whale/core/engine"
	"whale/data"
	"whale/internal/procstat"
)

// RolloutWorkload is the fixed workload of `whale bench rollouts` in one
// domain: the small preset's run cut to one cycle — val before, four
// weight steps (8 prompts × 4 rollouts each), a harness phase of two
// iterations (the incumbent re-scored under the new weights on 128 val
// tasks, then one iteration of 3 candidates with their extra passes),
// the boundary evaluations and the final test (64 tasks × 8) and val
// (128 × 8) of the best checkpoint. It is `whale run --headless --preset
// small --rounds 1 --E 0.125 --I 2` under the small preset of session 6
// (3 candidates an iteration, learning rate 1e-4, no KL penalty, whatever
// the preset now says), so older builds can run it too and figures stay
// comparable across builds.
func RolloutWorkload(domain string) (engine.Config, error) {
	cfg, err := engine.Preset("small", domain)
	if err != nil {
		return cfg, err
	}
	cfg.MaxRounds, cfg.E, cfg.I = 1, 0.125, 2
	cfg.Candidates, cfg.LR, cfg.KL, cfg.Budget = 3, 1e-4, 0, 8192
	// One ledger and that preset's harness-phase bound and test tasks (the
	// small preset now keeps the paper's two ledgers and 256 test tasks).
	cfg.TrainCalls, cfg.SearchCalls, cfg.HarnessPasses, cfg.HarnessCalls, cfg.TestTasks = 0, 0, 0, 640, 64
	return cfg, cfg.Validate()
}

// RolloutFigures is one domain's measurement.
type RolloutFigures struct {
	Domain string `json:"domain"`
	// Episodes and ModelCalls count training, scoring and evaluation;
	// Tokens the completion tokens they generated.
	Episodes   int     `json:"episodes"`
	ModelCalls int     `json:"model_calls"`
	Tokens     int     `json:"tokens"`
	Seconds    float64 `json:"seconds"`
	EpisodesPS float64 `json:"episodes_per_s"`
	CallsPS    float64 `json:"model_calls_per_s"`
	TokensPS   float64 `json:"tokens_per_s"`
	// CoresBusy is the process's CPU time over the wall time (0 where the
	// platform does not report CPU time).
	CoresBusy float64 `json:"cores_busy"`
	// Where the wall time went (engine.Timings); StoreShare is Store over
	// Seconds.
	SamplingS   float64 `json:"sampling_s"`
	TrainingS   float64 `json:"training_s"`
	EvaluationS float64 `json:"evaluation_s"`
	StoreS      float64 `json:"store_s"`
	StoreShare  float64 `json:"store_share"`
	// PeakRSSBytes is the run's peak resident memory (Linux's VmHWM, reset
	// when the run began where /proc/self/clear_refs allows, so each
	// domain of `--domain all` has its own; 0 where /proc reports none).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// MemoryLimitBytes is the soft memory limit the run ran under
	// (engine.MemoryLimit; 0: none).
	MemoryLimitBytes int64 `json:"memory_limit_bytes"`
	// TestMean8 is the run's result, to show that builds compared did
	// the same work.
	TestMean8 float64 `json:"test_mean_at_8"`
	// SampleBF16 says the rollouts were sampled from bfloat16 copies of
	// the weights (engine.Config.SampleBF16), SampleKVBF16 with bfloat16
	// KV caches (engine.Config.SampleKVBF16).
	SampleBF16   bool `json:"sample_bf16,omitempty"`
	SampleKVBF16 bool `json:"sample_kv_bf16,omitempty"`
}

// RolloutSampling is how the workload's local model samples: the
// engine.Config settings of the same names.
type RolloutSampling struct {
	SampleBF16, SampleKVBF16 bool
}

// BenchRollouts runs the workload once in dom with model m (trained in
// place: pass a fresh copy) on a new store in dir, writing resume points
// as engine.Env.ResumeEvery says, sampling as smp says, and measures it.
func BenchRollouts(ctx context.Context, dom data.Domain, m *bundle.Bundle, dir string, resumeEvery time.Duration, smp RolloutSampling) (RolloutFigures, error) {
	cfg, err := RolloutWorkload(dom.Name())
	if err != nil {
		return RolloutFigures{}, err
	}
	cfg.SampleBF16, cfg.SampleKVBF16 = smp.SampleBF16, smp.SampleKVBF16
	ws, err := engine.Open(filepath.Join(dir, dom.Name()+".db"), m.Model.Backend())
	if err != nil {
		return RolloutFigures{}, err
	}
	defer ws.Close()
	// The peak from here on is this run's: what an earlier domain left
	// behind is returned first.
	debug.FreeOSMemory()
	procstat.ResetPeakRSS()
	start, cpu0 := time.Now(), procstat.CPUTime()
	env := engine.Env{Domain: dom, Bundle: m, ResumeEvery: resumeEvery}
	eng, err := ws.StartRun("bench-rollouts-"+dom.Name(), cfg, env)
	if err != nil {
		return RolloutFigures{}, err
	}
	sum, err := eng.Run(ctx)
	if err != nil {
		return RolloutFigures{}, fmt.Errorf("experiments: bench rollouts %s: %w", dom.Name(), err)
	}
	limit := engine.MemoryLimit(eng.Cfg)
	if os.Getenv("GOMEMLIMIT") != "" {
		limit = debug.SetMemoryLimit(-1)
	}
	wall, cpu := time.Since(start), procstat.CPUTime()-cpu0
	l, t := eng.State().Ledger, eng.Timings()
	f := RolloutFigures{Domain: dom.Name(), Episodes: l.Episodes() + l.Eval, ModelCalls: l.Budgeted() + l.EvalCalls,
		Tokens: l.TrainTokens + l.SearchTokens + l.EvalTokens, Seconds: wall.Seconds(),
		SamplingS: t.Sampling.Seconds(), TrainingS: t.Training.Seconds(), EvaluationS: t.Evaluation.Seconds(),
		StoreS: t.Store.Seconds(), TestMean8: sum.TestMean8, PeakRSSBytes: procstat.PeakRSS(), MemoryLimitBytes: limit,
		SampleBF16: smp.SampleBF16, SampleKVBF16: smp.SampleKVBF16}
	f.EpisodesPS = float64(f.Episodes) / f.Seconds
	f.CallsPS = float64(f.ModelCalls) / f.Seconds
	f.TokensPS = float64(f.Tokens) / f.Seconds
	f.StoreShare = f.StoreS / f.Seconds
	if cpu > 0 {
		f.CoresBusy = cpu.Seconds() / f.Seconds
	}
	return f, nil
}
