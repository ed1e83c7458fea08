package engine

import (
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"whale/core/bundle"
	"whale/core/model"
	"whale/core/remote"
)

// Config is everything that determines a run. It is stored with the run,
// so a resumed run continues under exactly the configuration it began with.
type Config struct {
	Domain   string `json:"domain"`
	DataSeed uint64 `json:"data_seed"` // seed of the domain's splits
	Seed     uint64 `json:"seed"`      // seed of everything the run samples
	Preset   string `json:"preset"`

	// Condition selects which optimisers run. "" (WHALE) alternates weight
	// and harness phases under Schedule; the others are the experiments'
	// baselines, at the same rollout budget: "weight-only" runs only weight
	// phases under the incumbent harness; "harness-only" only harness
	// phases over the starting weights; "staged" weight phases until half
	// of Budget is spent (with two ledgers: until the weight ledger is),
	// then harness phases; "eval-only" (EvalOnly) nothing but evaluation; "fast-slow" (Fast-Slow
	// Training) runs, each cycle, one harness-proposal round over a Pareto
	// population of harnesses, then a few weight steps whose rollouts are
	// spread across that population. Phase lengths come from Schedule in
	// every condition (for fast-slow: fixed, I = 1).
	Condition string `json:"condition,omitempty"`
	// CurveTest also measures test mean@8 at every phase boundary (and at
	// the start), for learning curves. Those rollouts are evaluation: never
	// budgeted and never used to select anything.
	CurveTest bool `json:"curve_test,omitempty"`
	// CurveK is the k of those boundary measurements (0: TestK). A smaller
	// k makes long benches affordable: a boundary costs TestTasks × CurveK
	// rollouts, while the final test of the best checkpoint stays at TestK.
	// With CurveTest the run also skips the final val mean@8 of the best
	// checkpoint (Summary.BestValMean8): its test curve shows the selected
	// checkpoint without the selection's optimism already.
	CurveK int `json:"curve_k,omitempty"`
	// CurveSparse thins those boundary measurements to the points a
	// report's curves need (curvePoint): the start, the boundaries
	// numbered 1, 2, 4, 8, … and the run's last. Test rollouts draw under
	// keys of their own and select nothing, so the run's weights, samples,
	// val measurements and best checkpoint are bit-identical with or
	// without it; only the test points between are not measured.
	CurveSparse bool `json:"curve_sparse,omitempty"`

	// Schedule is "fixed" (E, I) or "adaptive".
	Schedule string  `json:"schedule"`
	E        float64 `json:"e"`
	I        int     `json:"i"`

	// Operator is the weight phase's operator: "rsft", "dpo" or "grpo".
	Operator string `json:"operator"`
	// Replay, when > 0, also trains each RSFT step on the kept samples of
	// the previous Replay steps. A replayed sample from an older harness is
	// re-verified under the current one (its final completion must parse to
	// the same action) or dropped; the counts are reported. Off (0) by
	// default: the paper warns that such samples contaminate the phase.
	Replay    int     `json:"replay,omitempty"`
	Threshold float64 `json:"threshold"`
	LR        float64 `json:"lr"`
	// KL, when > 0, penalises the divergence of the trained samples from
	// the phase's starting weights (rsft and grpo: the k3 estimate, weight
	// KL), so a weight phase keeps more of the diversity it starts with.
	KL float64 `json:"kl,omitempty"`
	// LoRA, when set, freezes the starting weights and trains low-rank
	// adapters on them instead (model.EnableLoRA, seeded by Seed): the
	// weights and optimizer blobs of resume points and checkpoints hold
	// the adapters alone, and Base names the frozen weights' blob.
	LoRA *model.LoRAConfig `json:"lora,omitempty"`
	// Base is the sha256 of the frozen weights under LoRA, stored as a
	// blob when the run began (set by New).
	Base string `json:"base,omitempty"`

	// PromptsPerStep (P) train tasks per weight step, each sampled Group
	// (G) times; an epoch is TrainTasks/P steps.
	PromptsPerStep int `json:"prompts_per_step"`
	Group          int `json:"group"`
	TrainTasks     int `json:"train_tasks"`
	// Proposer is "fragment" (the default, also for ""): fragments of the
	// incumbent's SEARCH_SPACE chosen by its failure shares against their
	// TARGETS and by past paired gains, with multi-knob jumps and Pareto
	// crossover; it never runs dry. "mutation" (one knob of the incumbent's SEARCH_SPACE per
	// candidate), "grid" (the product of GridKnobs' choices) or "llm" (an
	// OpenAI-compatible chat endpoint at ProposerURL serving ProposerModel).
	Proposer      string   `json:"proposer"`
	GridKnobs     []string `json:"grid_knobs,omitempty"`
	ProposerURL   string   `json:"proposer_url,omitempty"`
	ProposerModel string   `json:"proposer_model,omitempty"`
	// PolicyServer, if set, is an OpenAI-compatible server, or a pool of
	// them, that samples the run's rollouts instead of the local model
	// (core/remote). A server's model is trained only under LoRA, as a
	// fleet (fleet.go): whale trains the adapters and loads each version
	// into the servers; whole weights are never trained behind a server.
	// Its API key is read from the environment (remote.APIKeyEnv) by
	// whoever runs the engine and never stored.
	PolicyServer *PolicyServer `json:"policy_server,omitempty"`
	// SampleBF16 samples the run's rollouts (training, harness scoring and
	// evaluation) from bfloat16 copies of the local model's weights,
	// refreshed after every weight step, instead of its float32 weights:
	// a decoded token reads half the bytes, so decoding is faster where it
	// is memory-bound (few sequences at once on weights larger than the
	// caches; a small model's rollout batches run slower, each weight
	// widened to float32 in the product); the logits differ from
	// float32's by about 1e-2 relative, so the run is a different (still
	// deterministic) run. Training stays float32; GRPO then takes the old
	// policy's log-probabilities from the trained model's float32 forward
	// pass, not from the sampler's.
	SampleBF16 bool `json:"sample_bf16,omitempty"`
	// SampleKVBF16 keeps the local model's KV caches in bfloat16 while it
	// samples (model.SamplerOptions.KVBF16): half their memory and half
	// the bytes decode attention reads. Keys and values are rounded when
	// stored, so log-probabilities move by ~1e-3 and the run is a different
	// (still deterministic) run; off by default (docs/PERFORMANCE.md).
	// No flag sets it: a config file's [engine] table does.
	SampleKVBF16 bool `json:"sample_kv_bf16,omitempty"`
	// Candidates (M) per harness iteration, each scored once on ValTasks.
	Candidates int `json:"candidates"`
	ValTasks   int `json:"val_tasks"`
	AuditTasks int `json:"audit_tasks"`
	TestTasks  int `json:"test_tasks"`
	// ValK samples per val task at phase boundaries; TestK at the end.
	ValK  int `json:"val_k"`
	TestK int `json:"test_k"`

	// Budget bounds the model calls of training plus harness scoring
	// (evaluation is counted apart), so voting and extra turns are paid
	// for: one ledger for both phases. 0 means unbounded, then MaxRounds
	// (or the two ledgers below) end the run.
	Budget    int `json:"budget"`
	MaxRounds int `json:"max_rounds"`
	// TrainCalls and SearchCalls, when either is set, give the run the
	// paper's two ledgers instead of Budget: weight phases spend the
	// weight ledger (model calls of weight-step rollouts) and stop at it,
	// harness phases spend the search ledger (harness-scoring calls) and
	// stop at theirs. Once one ledger is spent the run goes on with the
	// other phase kind until that one is spent too, so WHALE spends the
	// same weight ledger as weight-only and the same search ledger as
	// harness-only. Evaluation (val and test) spends neither; it is
	// counted and reported apart (Ledger.EvalCalls).
	// A condition leaves the ledger it never spends untouched (weight-only
	// the search ledger, harness-only the weight ledger).
	TrainCalls  int `json:"train_calls,omitempty"`
	SearchCalls int `json:"search_calls,omitempty"`
	// ChosenOnly trains RSFT on the chosen completion of a voting call
	// alone, as before the harness fed the weights: by default every
	// verified-correct sample a vote drew is trained on too, once per
	// distinct token sequence (docs/HARNESS_SEARCH.md).
	ChosenOnly bool `json:"chosen_only,omitempty"`
	// HarnessCalls, when > 0, bounds the model calls of one harness phase
	// of WHALE's alternation (fixed or adaptive; the baselines keep their
	// own phase lengths): the phase ends once no further score fits in it,
	// after its I iterations or its patience at the latest. The incoming
	// incumbent's score under new weights is always paid for, and the
	// entries re-scored beside it take only what is left beyond M new
	// candidates' scores (and at most half), so every phase proposes. It is what keeps a cycle's length
	// in calls near E's whatever the harness costs a rollout.
	HarnessCalls int `json:"harness_calls,omitempty"`
	// HarnessPasses, when > 0, bounds one harness phase of WHALE's
	// alternation in passes of its incumbent over the val tasks instead
	// of in calls, and takes HarnessCalls' place: the phase may spend
	// HarnessPasses times what scoring the incumbent on every val task
	// cost when the phase began (at its last measured calls per rollout;
	// before it was ever scored, one call a sample). Candidates are
	// priced at the incumbent's price times their SAMPLES over its, so
	// 1 + S passes let a phase re-score the incumbent and score an
	// S-sample candidate whole however dear the incumbent has become;
	// 2 + 2S leave room for the candidate's confirming pass.
	HarnessPasses float64 `json:"harness_passes,omitempty"`

	MaxNewTokens int     `json:"max_new_tokens"`
	Temperature  float32 `json:"temperature"`
	// Harness is the starting harness: a built-in name ("h0") or source.
	Harness string `json:"harness"`
	// Model is the configuration of the weights being trained (set by New
	// from the environment's model), so a run resumes without the file it
	// started from.
	Model *model.Config `json:"model,omitempty"`
	// Start is where the starting weights came from (set by whoever
	// loaded them), so a run stopped before its first resume point
	// resumes without being told.
	Start *StartModel `json:"start,omitempty"`
	// Tokenizer is the sha256 of the model's tokenizer.json, stored as a
	// blob when the run began ("" for the byte tokenizer), so that resume,
	// forks and export use the tokenizer the run started with (set by New
	// from Env.TokenizerJSON).
	Tokenizer string `json:"tokenizer,omitempty"`
	// Generation is the model's generation_config.json as read (its
	// end-of-sequence ids end completions), set by New from Env.
	Generation *bundle.Generation `json:"generation,omitempty"`
}

// PolicyServer is where a run's rollouts come from when not from the local
// model: remote.Options less the key.
type PolicyServer struct {
	URL string `json:"url"`
	// URLs, for a pool of servers, are all of them, URL first.
	URLs        []string `json:"urls,omitempty"`
	Model       string   `json:"model"`
	Concurrency int      `json:"concurrency,omitempty"`
	// Timeout bounds one attempt of a call (0: remote's default).
	Timeout time.Duration `json:"timeout,omitempty"`
	MaxN    int           `json:"max_n,omitempty"`
	// Adapters is the folder, shared with the servers, that a run with
	// weight phases exports its LoRA adapters to (fleet.go);
	// ServerAdapters is that folder as the servers see it ("": the same
	// path). SyncEvery is how many weight steps one exported adapter
	// serves (0: 1, a new adapter after every step).
	Adapters       string `json:"adapters,omitempty"`
	ServerAdapters string `json:"server_adapters,omitempty"`
	SyncEvery      int    `json:"sync_every,omitempty"`
}

// Endpoints are the server URLs, the first one first.
func (s PolicyServer) Endpoints() []string {
	if len(s.URLs) > 0 {
		return s.URLs
	}
	return []string{s.URL}
}

// Policy is the servers as one policy (a pool, of one server or more),
// with the API key of the environment (remote.APIKeyEnv: a key is never
// stored) and its retry jitter seeded with seed.
func (s PolicyServer) Policy(seed uint64) (*remote.Pool, error) {
	return remote.NewPool(remote.PoolOptions{URLs: s.Endpoints(), Options: remote.Options{Model: s.Model, APIKey: os.Getenv(remote.APIKeyEnv),
		Concurrency: s.Concurrency, Timeout: s.Timeout, MaxN: s.MaxN, Seed: seed}})
}

// Presets size a run. tiny is for tests (a 2-cycle run in under a minute
// on 2 cores); paper uses the reference's ratios. small is the default
// demo and the bench's size, on the paper's protocol (issue 35):
//
//   - (E, I) = (0.6, 6), the paper's main setting: an epoch of 256 train
//     tasks at P × G = 8 × 4 is 32 steps, so a weight phase is
//     round(0.6 × 32) = 19 steps of 32 rollouts (608 rollouts; h0 costs
//     1.0 model call a rollout on searchqa and up to 1.9 on math, so
//     610–1,160 calls).
//   - Two ledgers: a weight ledger of 5,760 calls (five such phases at
//     math's 1.9 calls a rollout: 5 × 608 × 1.9 = 5,776, so a run has ≥ 5
//     cycles under h0) and a search ledger of 6,144 calls. Evaluation
//     spends neither.
//   - Each harness phase may spend 18 passes of its incumbent over the
//     128 val tasks (HarnessPasses): the incumbent's re-score (1 pass,
//     now free: the boundary's val draws), the dearest candidate the
//     fragment proposer may draw (SAMPLES = 8 in h0's SEARCH_SPACE: 8
//     passes) and its confirming pass with the incumbent's (8 + 1): 18.
//     At h0's 130 (searchqa) to 207 (math) calls a pass that is 2,340–
//     3,730 calls, more than most phases spend: a phase ends after its I
//     iterations, and the search ledger bounds them all.
//   - 256 test tasks (every domain's test split has at least 256).
//
// Its learning rate is the reference's, 1e-5: of the operators measured
// for issue 19 it is the one that keeps a weight phase's samples apart in
// every domain (docs/EXPLORATION.md).
var presets = map[string]Config{
	"tiny": {Schedule: "fixed", E: 0.25, I: 2, Operator: "rsft", Threshold: 0.5, LR: 3e-4,
		PromptsPerStep: 2, Group: 2, TrainTasks: 32, Candidates: 2, ValTasks: 8, AuditTasks: 4, TestTasks: 8,
		ValK: 1, TestK: 2, MaxRounds: 2, MaxNewTokens: 48, Temperature: 1, Harness: "h0"},
	"small": {Schedule: "fixed", E: 0.6, I: 6, Operator: "rsft", Threshold: 0.5, LR: 1e-5,
		PromptsPerStep: 8, Group: 4, TrainTasks: 256, Candidates: 2, ValTasks: 128, AuditTasks: 16, TestTasks: 256,
		ValK: 2, TestK: 8, TrainCalls: 5760, SearchCalls: 6144, HarnessPasses: 18, MaxNewTokens: 128, Temperature: 1, Harness: "h0"},
	"paper": {Schedule: "fixed", E: 0.6, I: 6, Operator: "rsft", Threshold: 0.5, LR: 1e-5,
		PromptsPerStep: 256, Group: 8, TrainTasks: 4096, Candidates: 3, ValTasks: 256, AuditTasks: 128, TestTasks: 512,
		ValK: 2, TestK: 8, MaxRounds: 6, MaxNewTokens: 256, Temperature: 1, Harness: "h0"},
}

// phaseAllowance is HarnessCalls where it applies (WHALE's alternation),
// else 0.
func (c Config) phaseAllowance() int {
	if c.Condition != "" {
		return 0
	}
	return c.HarnessCalls
}

// Preset returns a named preset for a domain.
func Preset(name, domain string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("engine: unknown preset %q (have %v)", name, PresetNames())
	}
	c.Preset, c.Domain, c.DataSeed, c.Seed = name, domain, 1, 1
	return c, nil
}

// PresetNames lists the presets.
func PresetNames() []string {
	var out []string
	for k := range presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Conditions are the non-WHALE values of Config.Condition.
var Conditions = []string{"weight-only", "harness-only", "staged", "fast-slow", EvalOnly}

// EvalOnly is the condition that trains and searches nothing: the run
// measures its starting weights under its starting harness (val, then
// test) and finishes. The bench's vote-only control is h0 with SAMPLES = k
// under it.
const EvalOnly = "eval-only"

func isCondition(c string) bool {
	for _, k := range Conditions {
		if k == c {
			return true
		}
	}
	return false
}

// ScheduleName says how phases alternate, for headers: "fixed schedule",
// or for a baseline "weight-only (fixed schedule)".
func (c Config) ScheduleName() string { return ScheduleName(c.Schedule, c.Condition) }

// ScheduleName names a schedule under a condition ("" for WHALE), as
// Config.ScheduleName does; a Summary carries both.
func ScheduleName(schedule, condition string) string {
	if condition == "" {
		return schedule + " schedule"
	}
	return condition + " (" + schedule + " schedule)"
}

// conditionName is Condition with WHALE's empty value named.
func (c Config) conditionName() string {
	if c.Condition == "" {
		return "whale"
	}
	return c.Condition
}

// curveK is the k of the boundary test measurements.
func (c Config) curveK() int {
	if c.CurveK > 0 {
		return c.CurveK
	}
	return c.TestK
}

// StepsPerEpoch is the number of weight steps in one pass over the train
// tasks.
func (c Config) StepsPerEpoch() int { return max(1, c.TrainTasks/max(1, c.PromptsPerStep)) }

// Validate checks the configuration, naming the bad field.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("engine: config field %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Domain == "":
		return bad("domain", "empty")
	case c.Schedule != "fixed" && c.Schedule != "adaptive":
		return bad("schedule", "%q (want fixed or adaptive)", c.Schedule)
	case c.Condition != "" && !isCondition(c.Condition):
		return bad("condition", "%q (want one of %v, or empty for WHALE)", c.Condition, Conditions)
	case c.Condition == "staged" && c.Budget <= 0 && !c.TwoLedgers():
		return bad("budget", "the staged condition splits a rollout budget in half, or spends two ledgers in turn: set budget > 0, or train_calls and search_calls")
	case c.Condition == "fast-slow" && (c.Schedule != "fixed" || c.I != 1):
		return bad("i", "the fast-slow condition runs one harness round per cycle: want the fixed schedule with I = 1 (have %s, I = %d)", c.Schedule, c.I)
	case c.Schedule == "fixed" && !(c.E > 0):
		return bad("e", "%v (want a fraction of an epoch > 0)", c.E)
	case c.Schedule == "fixed" && c.I < 1:
		return bad("i", "%d (want ≥ 1)", c.I)
	case c.Operator != "rsft" && c.Operator != "dpo" && c.Operator != "grpo":
		return bad("operator", "%q (want rsft, dpo or grpo)", c.Operator)
	case c.Replay < 0 || (c.Replay > 0 && c.Operator != "rsft"):
		return bad("replay", "%d (want ≥ 0, and replay only with the rsft operator)", c.Replay)
	case !(c.Threshold >= 0 && c.Threshold <= 1):
		return bad("threshold", "%v outside [0, 1]", c.Threshold)
	case !(c.LR > 0):
		return bad("lr", "%v (want > 0)", c.LR)
	case !(c.KL >= 0) || math.IsInf(c.KL, 0) || (c.KL > 0 && c.Operator == "dpo"):
		return bad("kl", "%v (want a finite β ≥ 0, with the rsft or grpo operator; dpo's β is its own)", c.KL)
	case c.PromptsPerStep < 1 || c.Group < 1 || c.TrainTasks < c.PromptsPerStep:
		return bad("prompts_per_step", "P=%d, G=%d, train tasks %d (want P, G ≥ 1 and at least P train tasks)", c.PromptsPerStep, c.Group, c.TrainTasks)
	case c.Proposer != "" && c.Proposer != "fragment" && c.Proposer != "mutation" && c.Proposer != "grid" && c.Proposer != "llm":
		return bad("proposer", "%q (want fragment, mutation, grid or llm)", c.Proposer)
	case c.Proposer == "grid" && (len(c.GridKnobs) == 0 || len(c.GridKnobs) > 2):
		return bad("grid_knobs", "%v (a grid varies one or two knobs)", c.GridKnobs)
	case c.Proposer == "llm" && (c.ProposerURL == "" || c.ProposerModel == ""):
		return bad("proposer_url", "the llm proposer needs an endpoint URL and a model name")
	case c.PolicyServer != nil && c.Condition != "harness-only" && c.LoRA == nil:
		return bad("policy_server", "a weight phase trains a model behind servers only as LoRA adapters that whale loads into them (add --lora-rank); whole weights would need a weight-sync path whale does not have (or run the harness-only condition; have %q)", c.conditionName())
	case c.PolicyServer != nil && c.PolicyServer.Adapters != "" && c.LoRA == nil:
		return bad("policy_server", "an adapters folder is for the weight phases of a LoRA run (--lora-rank); a harness-only run samples the servers' own model")
	case c.PolicyServer != nil && c.Condition != "harness-only" && c.PolicyServer.Adapters == "":
		return bad("policy_server", "a weight phase with servers needs a folder the servers share for the adapters whale exports (--fleet-adapters DIR)")
	case c.PolicyServer != nil && (c.PolicyServer.SyncEvery < 0 || (c.PolicyServer.Adapters == "" && (c.PolicyServer.SyncEvery != 0 || c.PolicyServer.ServerAdapters != ""))):
		return bad("policy_server", "sync_every %d, server_adapters %q: want sync_every ≥ 0, both only with an adapters folder", c.PolicyServer.SyncEvery, c.PolicyServer.ServerAdapters)
	case c.PolicyServer != nil && len(c.PolicyServer.URLs) > 0 && c.PolicyServer.URLs[0] != c.PolicyServer.URL:
		return bad("policy_server", "urls[0] %q is not url %q", c.PolicyServer.URLs[0], c.PolicyServer.URL)
	case c.PolicyServer != nil && c.SampleBF16:
		return bad("sample_bf16", "a server samples with its own weights: bfloat16 sampling applies to the local model only")
	case c.PolicyServer != nil && c.SampleKVBF16:
		return bad("sample_kv_bf16", "a server samples with its own caches: bfloat16 KV caches apply to the local model only")
	case c.PolicyServer != nil && (c.PolicyServer.URL == "" || c.PolicyServer.Model == ""):
		return bad("policy_server", "a server policy needs an endpoint URL and a model name")
	case c.Candidates < 1 || c.ValTasks < 1 || c.TestTasks < 1 || c.AuditTasks < 0:
		return bad("candidates", "M=%d with %d val, %d audit, %d test tasks (want M, val, test ≥ 1)", c.Candidates, c.ValTasks, c.AuditTasks, c.TestTasks)
	case c.ValK < 1 || c.TestK < 1:
		return bad("val_k", "val k %d, test k %d (want ≥ 1)", c.ValK, c.TestK)
	case c.CurveK < 0 || (c.CurveK > 0 && !c.CurveTest):
		return bad("curve_k", "%d (want ≥ 0, and set only with curve_test)", c.CurveK)
	case c.CurveSparse && !c.CurveTest:
		return bad("curve_sparse", "set without curve_test: there are no boundary test measurements to thin")
	case c.HarnessCalls < 0:
		return bad("harness_calls", "%d (want ≥ 0; 0: a harness phase is bounded by I or its patience alone)", c.HarnessCalls)
	case !(c.HarnessPasses >= 0) || math.IsInf(c.HarnessPasses, 1):
		return bad("harness_passes", "%v (want a finite number ≥ 0; 0: harness_calls bounds the phase)", c.HarnessPasses)
	case c.TrainCalls < 0 || c.SearchCalls < 0:
		return bad("train_calls", "train calls %d, search calls %d (want ≥ 0 each)", c.TrainCalls, c.SearchCalls)
	case c.TwoLedgers() && c.Budget != 0:
		return bad("budget", "%d beside train_calls %d and search_calls %d: a run has one ledger (budget) or two (train_calls, search_calls), not both", c.Budget, c.TrainCalls, c.SearchCalls)
	case c.TwoLedgers() && c.runs(PhaseWeights) && c.TrainCalls == 0:
		return bad("train_calls", "0: the %s condition trains weights, so its weight ledger needs train_calls > 0 beside search_calls %d", c.conditionName(), c.SearchCalls)
	case c.TwoLedgers() && c.runs(PhaseHarness) && c.SearchCalls == 0:
		return bad("search_calls", "0: the %s condition searches harnesses, so its search ledger needs search_calls > 0 beside train_calls %d", c.conditionName(), c.TrainCalls)
	case c.Budget < 0 || c.MaxRounds < 0 || (c.Budget == 0 && c.MaxRounds == 0 && !c.TwoLedgers() && c.Condition != EvalOnly):
		return bad("budget", "budget %d and max rounds %d: set at least one (≥ 0 each), or the two ledgers train_calls and search_calls", c.Budget, c.MaxRounds)
	case c.MaxNewTokens < 1:
		return bad("max_new_tokens", "%d (want ≥ 1)", c.MaxNewTokens)
	case !(c.Temperature > 0):
		return bad("temperature", "%v (rollouts sample, want > 0)", c.Temperature)
	case c.Harness == "":
		return bad("harness", "empty")
	case c.LoRA != nil && c.Condition == "harness-only":
		return bad("lora", "the harness-only condition trains no weights, so it takes no adapters")
	case c.LoRA != nil && c.Model != nil:
		if err := c.LoRA.Validate(*c.Model); err != nil {
			return bad("lora", "%v", err)
		}
	}
	return nil
}
