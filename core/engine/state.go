package engine

import (
	"encoding/json"
	"fmt"

	"whale/core/eval"
	"whale/core/search"
	"whale/core/weights"
	"whale/data"
)

// ValMeasure is a val measurement at a phase boundary: mean@ValK and
// pass@ValK.
type ValMeasure struct {
	Mean float64 `json:"mean"`
	Pass float64 `json:"pass"`
}

// Ledger counts rollouts (episodes) and model calls (completions, voting
// samples included) by purpose, with the completion tokens they
// generated. The budget counts the model calls of Train + Search, so a
// harness that spends more test-time compute pays for it; Eval is
// reported apart.
type Ledger struct {
	Train        int `json:"train"`
	Search       int `json:"search"`
	Eval         int `json:"eval"`
	TrainCalls   int `json:"train_calls"`
	SearchCalls  int `json:"search_calls"`
	EvalCalls    int `json:"eval_calls"`
	TrainTokens  int `json:"train_tokens"`
	SearchTokens int `json:"search_tokens"`
	EvalTokens   int `json:"eval_tokens"`
	// TrainKept counts the weight steps' rollouts kept for training (reward
	// ≥ the threshold: the chosen completions), TrainExtra the other
	// verified-correct samples of voting calls trained on beside them
	// (distinct token sequences; Config.ChosenOnly: none).
	TrainKept  int `json:"train_kept,omitempty"`
	TrainExtra int `json:"train_extra,omitempty"`
}

// Budgeted is what the budget counts: the model calls of training and
// harness scoring.
func (l Ledger) Budgeted() int { return l.TrainCalls + l.SearchCalls }

// Episodes is the rollouts of training and harness scoring.
func (l Ledger) Episodes() int { return l.Train + l.Search }

// PhaseRecord summarises one finished phase; every field is deterministic.
type PhaseRecord struct {
	Kind  Phase `json:"kind"`
	Round int   `json:"round"`
	// Rollouts and Calls are the episodes and model calls the phase spent
	// (training and scoring; evaluation apart).
	Rollouts  int     `json:"rollouts"`
	Calls     int     `json:"calls"`
	Steps     int     `json:"steps"`
	ValBefore float64 `json:"val_before"`
	ValAfter  float64 `json:"val_after"`
	// ValPassBefore and ValPassAfter are val pass@k at the same two
	// boundaries: pass@k − mean@k is how much the k samples of a task still
	// disagree, which a weight phase that collapses the policy drives to 0.
	ValPassBefore float64 `json:"val_pass_before"`
	ValPassAfter  float64 `json:"val_pass_after"`
	// Entropy and KeptFraction are a weight phase's health over its steps
	// (Health; nil for harness phases and phases without steps).
	Entropy      *float64 `json:"entropy,omitempty"`
	KeptFraction *float64 `json:"kept_fraction,omitempty"`
	Harness      string   `json:"harness"`
	Weights      string   `json:"weights"`
	Forced       bool     `json:"forced,omitempty"`
	// AuditGap is val − audit of the accepted harness (harness phases).
	AuditGap *float64 `json:"audit_gap,omitempty"`
	// Start is the budget spent (model calls) when the phase began.
	Start int `json:"start"`
	// Allowance is the model calls a harness phase could spend under
	// Config.HarnessPasses (0 otherwise).
	Allowance int `json:"allowance,omitempty"`
	// TestAfter is test mean@8 at the boundary (Config.CurveTest only;
	// never used to select anything).
	TestAfter *float64 `json:"test_after,omitempty"`
}

// State is a run's resume cursor: with the weights and optimizer blobs it
// names, it determines the rest of the run.
type State struct {
	Phase      Phase `json:"phase"`
	Round      int   `json:"round"`
	PhaseSteps int   `json:"phase_steps"` // steps or iterations done in this phase
	// PhaseStart is the budget spent (model calls) when the phase began,
	// PhaseEpisodes the rollouts.
	PhaseStart    int `json:"phase_start"`
	PhaseEpisodes int `json:"phase_episodes"`
	// PhaseAllowance is the model calls the running harness phase may
	// spend under Config.HarnessPasses, fixed when the phase began.
	PhaseAllowance int `json:"phase_allowance,omitempty"`
	// Started is set once the run's start (val before, first phase) is
	// behind it.
	Started   bool `json:"started"`
	Step      int  `json:"step"`      // weight steps taken in the run
	Iteration int  `json:"iteration"` // harness iterations in the run

	Fixed    *Fixed          `json:"fixed,omitempty"`
	Adaptive *Adaptive       `json:"adaptive,omitempty"`
	Archive  *search.Archive `json:"archive"`
	Ledger   Ledger          `json:"ledger"`
	Phases   []PhaseRecord   `json:"phases"`

	Weights   string `json:"weights"`   // blob hash of the current weights
	Optimizer string `json:"optimizer"` // blob hash of the optimizer state
	// PhaseWeights are the weights the running phase began with (the
	// DPO/GRPO reference).
	PhaseWeights string `json:"phase_weights"`
	// Kept lists blobs that kept checkpoints reference; other blobs of old
	// resume points are deleted.
	Kept map[string]bool `json:"kept,omitempty"`
	// EventsSeq and SamplesSeq are the store sequences at this resume
	// point; a resumed run drops what an interrupted run stored past them.
	EventsSeq  uint64 `json:"events_seq"`
	SamplesSeq uint64 `json:"samples_seq"`

	ValBefore     float64 `json:"val_before"`
	ValPassBefore float64 `json:"val_pass_before"`
	// Health accumulates the running weight phase's health.
	Health Health `json:"health"`
	// Servers are the run's servers' figures (fleet.go) in the process
	// that wrote this point, as of then; nil for a local policy.
	Servers *FleetStatus `json:"servers,omitempty"`
	// BestVal is the best val mean@k at a phase boundary and BestCkpt the
	// kept checkpoint it was measured on.
	BestVal  float64 `json:"best_val"`
	BestCkpt string  `json:"best_ckpt"`

	// Population is the fast-slow condition's harness population (the
	// Pareto front over val tasks, incumbent first).
	Population []string `json:"population,omitempty"`
	// TestStart is test mean@8 of the starting weights and harness, when
	// Config.CurveTest asks for learning curves.
	TestStart *float64 `json:"test_start,omitempty"`
	// TestSeen holds the test measurements of Config.CurveTest by weights
	// and harness ("WEIGHTS|HARNESS"): a boundary where neither changed
	// (a harness phase that kept its incumbent) reuses the measurement
	// instead of spending another TestTasks × TestK rollouts on the same
	// pair, and so does the final evaluation of the best checkpoint.
	TestSeen map[string]eval.Report `json:"test_seen,omitempty"`
	// ValSeen holds the phase boundaries' val measurements by weights and
	// incumbent ("WEIGHTS|HARNESS"): a boundary where neither changed (a
	// harness phase that kept its incumbent) reuses the measurement, as
	// TestSeen does, instead of spending ValTasks × ValK more rollouts on
	// the same pair — and a best-val checkpoint is then not picked by the
	// luckiest of several draws of the same weights.
	ValSeen map[string]ValMeasure `json:"val_seen,omitempty"`
	// ValDraws are the last val measurement's outcomes when it drew as
	// the scorer does (valdraws.go): the next harness phase's first score
	// of the incumbent reuses them instead of paying again.
	ValDraws *ValDraws `json:"val_draws,omitempty"`
	// TestCalls holds the model calls per test episode of each test
	// measurement, by TestSeen's key: test-time compute, reported beside
	// the score it bought.
	TestCalls map[string]float64 `json:"test_calls,omitempty"`
	// StartCalls is the model calls per test episode of TestStart's
	// measurement.
	StartCalls float64 `json:"start_calls,omitempty"`
	// TestTasks holds the mean reward per test task (in the split's order)
	// of each test measurement at k = TestK, by TestSeen's key.
	TestTasks map[string][]float64 `json:"test_tasks,omitempty"`
	// Exhausted is the weights blob under which a harness iteration found
	// nothing left to propose (every candidate of the proposer is archived):
	// the harness phase ends there, and a condition whose next phase is
	// again a harness phase under the same weights (harness-only, staged
	// after its switch) finishes instead of looping without spending.
	Exhausted string `json:"exhausted,omitempty"`
	// Starved is set when a harness iteration found the budget left
	// unable to pay for its next score (search.StarvedBudget): the run is
	// over, a little under its budget rather than over it.
	Starved bool `json:"starved,omitempty"`

	// Replay holds kept samples of recent weight steps (Config.Replay).
	Replay []replayed `json:"replay,omitempty"`

	Paused bool `json:"paused"`
	Force  bool `json:"force"`
	// ControlApplied is the journal sequence of the last command applied.
	ControlApplied uint64   `json:"control_applied"`
	Done           bool     `json:"done"`
	Summary        *Summary `json:"summary,omitempty"`
}

// HealthText is a weight phase's entropy and kept fraction for a log line
// (", entropy 1.234, kept 12%"), empty for a phase without them.
func (p PhaseRecord) HealthText() string {
	if p.Entropy == nil || p.KeptFraction == nil {
		return ""
	}
	return fmt.Sprintf(", entropy %.3f, kept %.0f%%", *p.Entropy, 100**p.KeptFraction)
}

// Health sums a weight phase's per-step figures: the mean token entropy of
// each step's sampled completions (WeightStepData.Entropy) and the samples
// kept of those rolled out.
type Health struct {
	Steps    int     `json:"steps"`
	Entropy  float64 `json:"entropy"` // sum over steps
	Kept     int     `json:"kept"`
	Rollouts int     `json:"rollouts"`
}

// add counts one weight step.
func (h *Health) add(entropy float64, kept, rollouts int) {
	h.Steps++
	h.Entropy += entropy
	h.Kept += kept
	h.Rollouts += rollouts
}

// means returns the mean step entropy and the kept fraction, nil without
// steps.
func (h Health) means() (entropy, kept *float64) {
	if h.Steps == 0 {
		return nil, nil
	}
	e, k := h.Entropy/float64(h.Steps), float64(h.Kept)/float64(max(1, h.Rollouts))
	return &e, &k
}

func (s *State) schedule() Schedule {
	if s.Fixed != nil {
		return s.Fixed
	}
	return s.Adaptive
}

// Summary is what a finished run reports (`whale run --json`).
type Summary struct {
	RunID        string `json:"run_id"`
	Domain       string `json:"domain"`
	Schedule     string `json:"schedule"`
	Condition    string `json:"condition,omitempty"`
	Rounds       int    `json:"rounds"`
	Rollouts     int    `json:"rollouts"`
	EvalRollouts int    `json:"eval_rollouts"`
	// ModelCalls is the budget spent (training and scoring completions,
	// voting samples included): TrainCalls (the weight ledger) plus
	// SearchCalls (the search ledger). EvalCalls is the evaluation's (val
	// and test), which spends neither ledger.
	ModelCalls  int `json:"model_calls"`
	TrainCalls  int `json:"train_calls"`
	SearchCalls int `json:"search_calls"`
	EvalCalls   int `json:"eval_calls"`
	// TestCallsPerEpisode is the model calls per test episode of the
	// best checkpoint's test measurement: the test-time compute its score
	// cost (a SAMPLES = 4 vote: about 4).
	TestCallsPerEpisode float64 `json:"test_calls_per_episode"`
	// StartCallsPerEpisode is the same of the starting weights and harness
	// (Config.CurveTest only; 0 otherwise): what one sample of h0 costs.
	StartCallsPerEpisode float64 `json:"start_calls_per_episode,omitempty"`
	// TestPerTask is the best checkpoint's mean reward per test task, in
	// the split's order: runs on the same test tasks pair task by task,
	// so a report's interval can carry the test set's own error.
	TestPerTask []float64 `json:"test_per_task,omitempty"`
	// KeptPerCall is the training samples the weight steps kept per model
	// call of the weight ledger, counting every verified-correct sample of
	// a vote (Ledger.TrainExtra); KeptPerCallChosen counts the chosen
	// completions alone, as before the harness fed the weights.
	KeptPerCall       float64       `json:"kept_per_call"`
	KeptPerCallChosen float64       `json:"kept_per_call_chosen"`
	Phases            []PhaseRecord `json:"phases"`
	BestValMean       float64       `json:"best_val_mean_at_k"`
	// BestValMean8 re-measures the best checkpoint on val at k = 8 (nil
	// in runs with learning curves, Config.CurveK).
	BestValMean8 *float64   `json:"best_val_mean_at_8,omitempty"`
	TestMean8    float64    `json:"test_mean_at_8"`
	TestPass8    float64    `json:"test_pass_at_8"`
	TestCI95     [2]float64 `json:"test_ci95"`
	TestK        int        `json:"test_k"`
	FinalHarness string     `json:"final_harness"`
	FinalWeights string     `json:"final_weights"`
	BestCkpt     string     `json:"best_checkpoint"`
	// TestStart is test mean@8 before any phase (Config.CurveTest).
	TestStart *float64 `json:"test_start,omitempty"`
	// Entropy is the mean token entropy of the weight steps' sampled
	// completions over the whole run (nil without weight steps).
	Entropy *float64 `json:"entropy,omitempty"`
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic("engine: marshal " + err.Error()) // only engine-owned types reach here
	}
	return b
}

// replayed is a kept sample remembered for replay, with where it came from.
type replayed struct {
	Sample  weights.Sample `json:"sample"`
	Step    int            `json:"step"`
	Harness string         `json:"harness"`
	Weights string         `json:"weights"`
	// Text and Action are the final completion and what the harness read
	// from it, for re-verification under another harness.
	Text   string      `json:"text"`
	Action data.Action `json:"action"`
}
