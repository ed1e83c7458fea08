package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"whale/core/basemodel"
	"whale/core/bundle"
	"whale/core/engine"
	"whale/core/eval"
	"whale/core/model"
	"whale/core/policy"
	"whale/core/pretrain"
	"whale/core/search"
	"whale/core/tokenizer"
	"whale/data"
	"whale/harnesses"
)

func init() { register(newEvalCmd) }

// evalReport is `whale eval --json` output: eval.Report's figures plus
// what was evaluated, so a figure can be traced to its inputs.
type evalReport struct {
	eval.Report
	Domain       string  `json:"domain"`
	Split        string  `json:"split"`
	Harness      string  `json:"harness"`
	HarnessHash  string  `json:"harness_hash"`
	Policy       string  `json:"policy"`
	Model        string  `json:"model,omitempty"`
	ModelHash    string  `json:"model_hash,omitempty"`
	Seed         uint64  `json:"seed"`
	DataSeed     uint64  `json:"data_seed"`
	Temperature  float32 `json:"temperature"`
	MaxNewTokens int     `json:"max_new_tokens"`
	PolicyCalls  int     `json:"policy_calls"`
	Seconds      float64 `json:"seconds"`
	// HarnessErrors holds the first harness errors (file:line:col).
	HarnessErrors []string `json:"harness_errors,omitempty"`
	// Audit is the null-policy audit's verdict on a harness that is not
	// built in (absent with --no-audit).
	Audit *engine.NullAudit `json:"audit,omitempty"`
}

// gridRow is one candidate of `whale eval --grid`.
type gridRow struct {
	Knob   string     `json:"knob"`
	Choice string     `json:"choice"`
	File   string     `json:"file"`
	Report evalReport `json:"report"`
	Delta  float64    `json:"delta"`
}

// evalSetup is everything one evaluation needs besides the harness.
type evalSetup struct {
	dom      data.Domain
	tasks    []data.Task
	pol      policy.Policy
	polName  string
	model    string
	hash     string
	dataSeed uint64
	opts     harnesses.RunOptions
	// tok is the policy's tokenizer (the model's; the embedded model's
	// for the scripted and server policies): the audit fits its chats
	// with it.
	tok tokenizer.Tokenizer
	// trace, if set, receives every trajectory as one JSON line.
	trace io.Writer
}

// openModel opens the model --model names ("" = the embedded one) with
// its tokenizer: a whale model file or a Hugging Face folder.
func openModel(path string) (*bundle.Bundle, error) {
	return bundle.Open(path, runBackend())
}

// runEval runs one harness source and summarises the rollouts.
func runEval(ctx context.Context, st *evalSetup, name, src, split string) (evalReport, error) {
	h, err := harnesses.Load(name, src, harnesses.EnvOf(st.dom))
	if err != nil {
		return evalReport{}, err
	}
	t0 := time.Now()
	ts, err := harnesses.Run(ctx, h, st.dom, st.tasks, st.pol, st.opts)
	if err != nil {
		return evalReport{}, err
	}
	if err := engine.NonFiniteRollout(ts); err != nil {
		return evalReport{}, fmt.Errorf("eval: the model's logits went non-finite (%v): its scores would mean nothing", err)
	}
	if st.trace != nil {
		enc := json.NewEncoder(st.trace)
		for _, tr := range ts {
			if err := enc.Encode(tr); err != nil {
				return evalReport{}, fmt.Errorf("write trace: %w", err)
			}
		}
	}
	outs := make([]eval.Outcome, len(ts))
	rep := evalReport{Domain: st.dom.Name(), Split: split, Harness: name, HarnessHash: h.Hash, Policy: st.polName,
		Model: st.model, ModelHash: st.hash, Seed: st.opts.Seed, DataSeed: st.dataSeed,
		Temperature: st.opts.Temperature, MaxNewTokens: st.opts.MaxNewTokens}
	for i, tr := range ts {
		outs[i] = eval.Outcome{TaskID: tr.TaskID, Reward: tr.Reward, Failure: string(tr.Failure), Answer: tr.FinalAnswer()}
		rep.PolicyCalls += tr.ModelCalls()
		if tr.Error != "" && len(rep.HarnessErrors) < 5 {
			rep.HarnessErrors = append(rep.HarnessErrors, tr.TaskID+": "+tr.Error)
		}
	}
	if rep.Report, err = eval.Summarise(outs, st.opts.Seed); err != nil {
		return evalReport{}, err
	}
	rep.Seconds = time.Since(t0).Seconds()
	return rep, nil
}

// evalFlags are whale eval's flags.
type evalFlags struct {
	domain, harness, split, modelPath, pol, gridDir, tracePath string
	k, n, maxNew                                               int
	seed, dataSeed                                             uint64
	temp                                                       float64
	asJSON, exact, probe, noAudit                              bool
	maxBatch                                                   int
	server                                                     serverFlags
	df                                                         dataFlags
}

func newEvalCmd() *cobra.Command {
	var fl evalFlags
	c := &cobra.Command{
		Use:   "eval --domain D --harness FILE|h0 --split val|audit|test --k K",
		Short: "Score a model through a harness: mean@k, pass@k, a bootstrap 95% interval, failures by kind",
		Long: "Runs the first N tasks of a split K times each through the harness with the model (the embedded base\n" +
			"model unless --model FILE), the oracle or the random policy, and prints mean@k (mean correctness over\n" +
			"the K samples of each task, averaged over tasks), pass@k, maj@k (the plurality answer's correctness), a 95% bootstrap interval of mean@k over\n" +
			"tasks and the failures by kind. The model samples at --temperature (default 1). The domain is\n" +
			"opened with the data seed the model's corpus was built from (its train split), unless --data-seed.\n" +
			"With --grid DIR it also scores every one-knob change of the harness's SEARCH_SPACE and the\n" +
			"combination of the knob choices that beat it, writing each candidate's source into DIR.\n" +
			"With --policy-url URL --policy-model NAME an OpenAI-compatible server is the policy (see README).\n" +
			"With --probe it only runs the copy probe on the model (greedy: random letters, word lists,\n" +
			"lookups; made-up strings, no task data): whether the model copies from its context at all.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return fl.run(cmd) },
	}
	fl.register(c.Flags())
	return c
}

func (fl *evalFlags) register(f *pflag.FlagSet) {
	domainFlag(f, &fl.domain)
	f.StringVar(&fl.harness, "harness", "", "harness file, or the name of a built-in one (h0)")
	f.StringVar(&fl.split, "split", data.SplitVal, "split: "+strings.Join(data.Splits, ", "))
	f.IntVar(&fl.k, "k", 1, "samples per task")
	f.IntVar(&fl.n, "n", 1<<30, "number of tasks (the first N of the split; default all)")
	f.StringVar(&fl.modelPath, "model", "", "model: a whale model file (safetensors written by whale pretrain or export) or a Hugging Face folder; default the embedded base model")
	f.StringVar(&fl.pol, "policy", "model", "policy: model, oracle or random")
	f.Uint64Var(&fl.seed, "seed", 1, "sampling seed (with each request's key it fixes every sampled token)")
	f.Uint64Var(&fl.dataSeed, "data-seed", 1, "seed of the domain (default: the model's corpus data seed, 1 for oracle and random)")
	f.Float64Var(&fl.temp, "temperature", 1, "sampling temperature (0 = greedy)")
	f.IntVar(&fl.maxNew, "max-new-tokens", 256, "completion length bound of each policy call")
	f.IntVar(&fl.maxBatch, "max-batch", 0, fmt.Sprintf("sequences the model decodes at once (0: %d, the width runs sample at)", engine.SampleWidth))
	f.BoolVar(&fl.exact, "exact", false, "decode in fixed row blocks so log-probabilities do not depend on batch composition (slower)")
	f.StringVar(&fl.gridDir, "grid", "", "also score every one-knob change of the harness's SEARCH_SPACE, writing candidates into this directory")
	f.StringVar(&fl.tracePath, "trace", "", "write every trajectory (prompts, completions, tool calls, reward) as JSON lines to this file")
	f.BoolVar(&fl.probe, "probe", false, fmt.Sprintf("only run the copy probe on the model (--n probes of each kind, default %d)", probeN))
	jsonFlag(f, &fl.asJSON, jsonObject)
	f.BoolVar(&fl.noAudit, "no-audit", false, "skip the null-policy audit of a harness that is not built in (it runs before the evaluation; a refused harness is not evaluated)")
	fl.server.register(f)
	fl.df.register(f)
}

// run is whale eval: the probe, or the harness's evaluation (and with
// --grid its one-knob changes).
func (fl *evalFlags) run(cmd *cobra.Command) error {
	if err := fl.server.check(cmd.Flags()); err != nil {
		return err
	}
	if fl.maxBatch < 0 {
		return usageError{fmt.Errorf("--max-batch %d: want ≥ 1, or 0 for %d", fl.maxBatch, engine.SampleWidth)}
	}
	if fl.server.set() && (fl.probe || fl.exact || fl.modelPath != "" || cmd.Flags().Changed("policy")) {
		return usageError{fmt.Errorf("--policy-url makes the server the policy: drop --policy, --model, --exact and --probe, which are for local ones")}
	}
	if fl.probe {
		return fl.runProbe(cmd)
	}
	if err := fl.check(); err != nil {
		return err
	}
	st, err := fl.setup(cmd)
	if err != nil {
		return err
	}
	name, src, err := readHarnessSource(fl.harness, fl.domain)
	if err != nil {
		return err
	}
	if fl.tracePath != "" {
		tf, err := os.Create(fl.tracePath)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		defer tf.Close()
		st.trace = tf
	}
	log := cmd.ErrOrStderr()
	st.opts.Progress = progressPrinter(log, name)
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	audit, err := fl.audit(ctx, st, log, name, src)
	if err != nil {
		return err
	}
	base, err := runEval(ctx, st, name, src, fl.split)
	if err != nil {
		return err
	}
	base.Audit = audit
	out := cmd.OutOrStdout()
	if fl.gridDir == "" {
		if fl.asJSON {
			return printJSON(out, base)
		}
		printEval(out, base)
		return nil
	}
	rows, err := runGrid(ctx, st, log, name, src, fl.split, fl.gridDir, base)
	if err != nil {
		return err
	}
	if fl.asJSON {
		return printJSON(out, map[string]any{"base": base, "candidates": rows})
	}
	printEval(out, base)
	fmt.Fprintf(out, "\n%-24s %-34s %8s %8s  %s\n", "knob", "choice", "mean@k", "delta", "file")
	for _, r := range rows {
		fmt.Fprintf(out, "%-24s %-34s %8.4f %+8.4f  %s\n", r.Knob, harnessOneLine(r.Choice), r.Report.MeanAtK, r.Delta, r.File)
	}
	return nil
}

// runProbe runs the copy probe on the model.
func (fl *evalFlags) runProbe(cmd *cobra.Command) error {
	n := fl.n
	if !cmd.Flags().Changed("n") {
		n = probeN // --n's default means "the whole split", which a probe has not
	}
	if n < 1 || n > maxProbeN {
		return usageError{fmt.Errorf("--n %d: a probe runs 1 to %d probes of each kind", n, maxProbeN)}
	}
	b, err := openModel(fl.modelPath)
	if err != nil {
		return err
	}
	if b.TokenizerJSON != nil {
		return fmt.Errorf("--probe: the copy probe is written in the byte tokenizer's ids, and %s has its own tokenizer", b.Name)
	}
	r, err := pretrain.Probe(cmd.Context(), model.NewSampler(b.Model, model.SamplerOptions{}), n, fl.seed)
	if err != nil {
		return err
	}
	if fl.asJSON {
		return printJSON(cmd.OutOrStdout(), r)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", b.Name, r)
	return nil
}

// check validates the evaluation's flags.
func (fl *evalFlags) check() error {
	switch {
	case fl.k < 1 || fl.n < 1 || fl.maxNew < 1:
		return usageError{fmt.Errorf("--k (%d), --n (%d) and --max-new-tokens (%d) must be at least 1", fl.k, fl.n, fl.maxNew)}
	case !slices.Contains(data.Splits, fl.split):
		return usageError{fmt.Errorf("unknown --split %q (want one of %s)", fl.split, strings.Join(data.Splits, ", "))}
	case fl.harness == "":
		return usageError{fmt.Errorf("--harness FILE|h0 is required")}
	case !(fl.temp >= 0):
		return usageError{fmt.Errorf("--temperature %v must be ≥ 0", fl.temp)}
	}
	return nil
}

// setup opens the policy, the domain and the split's first N tasks.
func (fl *evalFlags) setup(cmd *cobra.Command) (*evalSetup, error) {
	st := &evalSetup{polName: fl.pol, opts: harnesses.RunOptions{Seed: fl.seed, K: fl.k, Temperature: float32(fl.temp), MaxNewTokens: fl.maxNew, KeyPrefix: fl.split + "/"},
		tok: basemodel.Tokenizer()}
	var mb *bundle.Bundle
	switch {
	case fl.server.set():
		st.polName, st.dataSeed = fl.server.name(), 1
	case fl.pol == "model":
		var err error
		if mb, err = openModel(fl.modelPath); err != nil {
			return nil, err
		}
		st.model, st.hash, st.dataSeed, st.tok = mb.Name, mb.SHA256, mb.DataSeed, mb.Tokenizer
	case fl.pol == "oracle" || fl.pol == "random":
		if fl.modelPath != "" {
			return nil, usageError{fmt.Errorf("--model needs --policy model, not %s", fl.pol)}
		}
		st.dataSeed = 1
	default:
		return nil, usageError{fmt.Errorf("unknown --policy %q (want model, oracle or random)", fl.pol)}
	}
	if cmd.Flags().Changed("data-seed") {
		st.dataSeed = fl.dataSeed
	}
	d, err := openHarnessDomain(fl.domain, st.dataSeed, fl.df)
	if err != nil {
		return nil, err
	}
	st.dom = d
	switch {
	case fl.server.set():
		st.pol, err = fl.server.policy(fl.seed)
	case fl.pol == "model":
		width := cmp.Or(fl.maxBatch, engine.SampleWidth)
		st.pol, err = mb.Policy(model.SamplerOptions{Exact: fl.exact, MaxBatch: width})
		st.opts.Lanes = engine.Lanes(mb.Model, width) // as a run's evaluations decode
	default:
		st.pol, err = scriptedPolicy(fl.pol, d)
	}
	if err != nil {
		return nil, err
	}
	if st.tasks, err = d.Tasks(fl.split); err != nil {
		return nil, err
	}
	if len(st.tasks) > fl.n {
		st.tasks = st.tasks[:fl.n]
	}
	return st, nil
}

// audit runs the null-policy audit on a harness that is not built in
// (unless --no-audit): a harness the audit refuses is not evaluated, and
// the error gives the audit's figures. A harness that does not load is
// left to the evaluation, which reports its issues.
func (fl *evalFlags) audit(ctx context.Context, st *evalSetup, log io.Writer, name, src string) (*engine.NullAudit, error) {
	if fl.noAudit || isBuiltin(st.dom.Name(), src) {
		return nil, nil
	}
	h, err := harnesses.Load(name, src, harnesses.EnvOf(st.dom))
	if err != nil {
		return nil, nil
	}
	a, ok, err := engine.AuditHarness(ctx, st.dom, st.tok, h, 0, 1)
	if err != nil || !ok {
		return nil, err
	}
	if a.Refused {
		return nil, fmt.Errorf("%s; not evaluated (--no-audit evaluates it anyway)", a.Sentence())
	}
	fmt.Fprintf(log, "%s\n", a.Sentence())
	return &a, nil
}

// isBuiltin reports whether src is one of domain's built-in harnesses.
func isBuiltin(domain, src string) bool {
	for _, n := range harnesses.BuiltinNames(domain) {
		if b, err := harnesses.Builtin(domain, n); err == nil && harnesses.Hash(b) == harnesses.Hash(src) {
			return true
		}
	}
	return false
}

// runGrid scores the knob grid of src (search.KnobGrid), writing each
// candidate's source into dir.
func runGrid(ctx context.Context, st *evalSetup, log io.Writer, name, src, split, dir string, base evalReport) ([]gridRow, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("grid: %w", err)
	}
	reports := map[string]evalReport{}
	files := map[string]string{}
	key := func(c search.GridCandidate) string { return c.Knob + "\x00" + c.Choice }
	res, err := search.KnobGrid(src, base.MeanAtK, func(c search.GridCandidate) (float64, error) {
		file := filepath.Join(dir, gridFileName(c.Knob, c.Choice))
		if c.Knob == "combined" {
			file = filepath.Join(dir, "combined.star")
		}
		if err := os.WriteFile(file, []byte(c.Source), 0o644); err != nil {
			return 0, fmt.Errorf("grid: %w", err)
		}
		rep, err := runEval(ctx, st, file, c.Source, split)
		if err != nil {
			return 0, err
		}
		if c.Knob == "combined" {
			fmt.Fprintf(log, "grid: combined (%s): mean@k %.4f (%+.4f)\n", c.Choice, rep.MeanAtK, rep.MeanAtK-base.MeanAtK)
		} else {
			fmt.Fprintf(log, "grid: %s = %s: mean@k %.4f (%+.4f)\n", c.Knob, harnessOneLine(c.Choice), rep.MeanAtK, rep.MeanAtK-base.MeanAtK)
		}
		reports[key(c)], files[key(c)] = rep, file
		return rep.MeanAtK, nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]gridRow, len(res))
	for i, r := range res {
		rows[i] = gridRow{Knob: r.Knob, Choice: r.Choice, File: files[key(r.GridCandidate)], Report: reports[key(r.GridCandidate)], Delta: r.Score - base.MeanAtK}
	}
	return rows, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// gridFileName names a candidate file after its knob and choice.
func gridFileName(knob, choice string) string {
	c := unsafeName.ReplaceAllString(choice, "_")
	if len(c) > 40 {
		s := sha256.Sum256([]byte(choice))
		c = c[:24] + "-" + hex.EncodeToString(s[:4])
	}
	return knob + "=" + strings.Trim(c, "_") + ".star"
}

// progressPrinter prints a line to stderr whenever another tenth of the
// rollouts is done.
func progressPrinter(w io.Writer, name string) func(done, total int) {
	last := -1
	return func(done, total int) {
		if total == 0 {
			return
		}
		if tenth := 10 * done / total; tenth != last {
			last = tenth
			fmt.Fprintf(w, "eval %s: %d/%d rollouts done\n", name, done, total)
		}
	}
}

func printEval(w io.Writer, r evalReport) {
	fmt.Fprintf(w, "%s (%s) on %s/%s, policy %s", r.Harness, r.HarnessHash[:12], r.Domain, r.Split, r.Policy)
	if r.Model != "" {
		fmt.Fprintf(w, ", model %s (%s)", r.Model, r.ModelHash[:12])
	}
	fmt.Fprintf(w, "\ntasks %d × k %d = %d rollouts, %d policy calls, %.1fs (temperature %g, seed %d, data seed %d)\n",
		r.Tasks, r.K, r.Rollouts, r.PolicyCalls, r.Seconds, r.Temperature, r.Seed, r.DataSeed)
	fmt.Fprintf(w, "mean@%d %.4f  95%% CI [%.4f, %.4f]  pass@%d %.4f  maj@%d %.4f\n", r.K, r.MeanAtK, r.CI95[0], r.CI95[1], r.K, r.PassAtK, r.K, r.MajAtK)
	printFailures(w, r.FailureKinds, r.HarnessErrors)
}

// printFailures lists failure counts by kind, in kind order, then harness
// errors (eval and harness run share this layout).
func printFailures(w io.Writer, byKind map[string]int, harnessErrors []string) {
	for _, kind := range slices.Sorted(maps.Keys(byKind)) {
		fmt.Fprintf(w, "  %-14s %d\n", kind, byKind[kind])
	}
	for _, e := range harnessErrors {
		fmt.Fprintf(w, "harness error: %s\n", e)
	}
}

// probeN is how many probes of each kind `eval --probe` runs by default
// (pretraining logs the same 16); maxProbeN bounds --n, since every probe
// of a batch holds its own cache.
const probeN, maxProbeN = 16, 4096
