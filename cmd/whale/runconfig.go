package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"whale/core/engine"
	"whale/core/runconfig"
)

// configFileFlag is --config FILE: a TOML file whose top-level keys are
// the command's flags; flags given on the command line win over it.
type configFileFlag struct {
	path string
	// engine holds the [engine] table's entries (whale run only).
	engine []runconfig.Entry
	file   runconfig.File
	// set are the flags the file set (those the command line left alone).
	set map[string]bool
}

func (c *configFileFlag) register(f *pflag.FlagSet, what string) {
	f.StringVar(&c.path, "config", "", "read "+what+" from a TOML file: each key a flag of this command (domain = \"math\", E = 0.25, sample-bf16 = true), flags on the command line win; 'whale show RUN --config' writes one")
}

// engineKeys are the [engine] table's keys: run settings that no flag of
// whale run sets, as engine.Config names them in JSON.
var engineKeys = []string{"threshold", "prompts_per_step", "group", "train_tasks", "val_tasks", "audit_tasks", "test_tasks",
	"val_k", "test_k", "max_new_tokens", "temperature", "curve_test", "curve_k", "chosen_only", "sample_kv_bf16"}

// apply reads the file (if --config was given) and sets every flag it
// names that the command line left alone. withEngine admits the [engine]
// table. An unknown key, a value of the wrong type or one the flag
// refuses is a usage error naming the file, line and key.
func (c *configFileFlag) apply(flags *pflag.FlagSet, withEngine bool) error {
	if c.path == "" {
		return nil
	}
	f, err := runconfig.Read(c.path)
	if err != nil {
		return usageError{err}
	}
	c.file = f
	for _, e := range f.Entries {
		if e.Table == runconfig.EngineTable {
			if !withEngine {
				return usageError{f.Errorf(e, "this command's file has no [%s] table", runconfig.EngineTable)}
			}
			if !slices.Contains(engineKeys, e.Key) {
				return usageError{f.Errorf(e, "unknown key (the [%s] table holds %s)", runconfig.EngineTable, strings.Join(engineKeys, ", "))}
			}
			c.engine = append(c.engine, e)
			continue
		}
		fl := flags.Lookup(e.Key)
		if fl == nil || e.Key == "config" || e.Key == "help" {
			return usageError{f.Errorf(e, "unknown key (want a flag of this command, without its dashes)")}
		}
		if flags.Changed(e.Key) {
			continue // the command line wins
		}
		text, err := runconfig.FlagValue(e.Value, fl.Value.Type())
		if err != nil {
			return usageError{f.Errorf(e, "%v", err)}
		}
		if err := flags.Set(e.Key, text); err != nil {
			return usageError{f.Errorf(e, "%v", err)}
		}
		if c.set == nil {
			c.set = map[string]bool{}
		}
		c.set[e.Key] = true
	}
	return nil
}

// applyEngine sets the [engine] table's settings on cfg.
func (c *configFileFlag) applyEngine(cfg *engine.Config) error {
	for _, e := range c.engine {
		b, err := json.Marshal(map[string]any{e.Key: e.Value})
		if err != nil {
			return usageError{c.file.Errorf(e, "%v", err)}
		}
		if err := json.Unmarshal(b, cfg); err != nil {
			return usageError{c.file.Errorf(e, "%s (want the type of engine.Config's %s)", describeJSONError(err), e.Key)}
		}
	}
	return nil
}

func describeJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("a %s where a %s belongs", te.Value, te.Type)
	}
	return err.Error()
}

// configTOML is a stored run's configuration as a file that 'whale run
// --config' reads back to the same configuration: every setting written
// out (flags as keys, the rest in [engine]), so the file does not depend
// on the presets' defaults staying as they are.
func configTOML(id string, cfg engine.Config) ([]byte, error) {
	comment := fmt.Sprintf("run %s: 'whale run --headless --config FILE' starts a run with this configuration\n(written by 'whale show %s --config'; the data and backend flags are not stored with a run)", id, id)
	if cfg.Start != nil && cfg.Start.Kind == engine.StartCheckpoint {
		return runconfig.Encode(comment+"\nthis run began from a kept checkpoint, under its run's configuration",
			[]runconfig.Pair{{Key: "from-checkpoint", Value: cfg.Start.Name}}, nil)
	}
	p := func(key string, v any) runconfig.Pair { return runconfig.Pair{Key: key, Value: v} }
	cond := cfg.Condition
	if cond == "" {
		cond = "whale"
	}
	top := []runconfig.Pair{
		p("domain", cfg.Domain), p("preset", cfg.Preset), p("seed", int64(cfg.Seed)), p("condition", cond),
		p("schedule", cfg.Schedule), p("E", cfg.E), p("I", int64(cfg.I)), p("weights", cfg.Operator),
		p("lr", cfg.LR), p("kl", cfg.KL), p("replay", int64(cfg.Replay)), p("rounds", int64(cfg.MaxRounds)),
		p("harness-calls", int64(cfg.HarnessCalls)), p("harness-passes", cfg.HarnessPasses), p("candidates", int64(cfg.Candidates)),
	}
	// One ledger (budget) or two (train-calls, search-calls): the flags
	// exclude each other, so the file names only the kind the run has.
	if cfg.TwoLedgers() {
		top = append(top, p("train-calls", int64(cfg.TrainCalls)), p("search-calls", int64(cfg.SearchCalls)))
	} else {
		top = append(top, p("budget", int64(cfg.Budget)))
	}
	if cfg.Proposer != "" {
		top = append(top, runconfig.Pair{Key: "proposer", Value: cfg.Proposer})
	}
	if len(cfg.GridKnobs) > 0 {
		top = append(top, runconfig.Pair{Key: "grid-knobs", Value: strings.Join(cfg.GridKnobs, ",")})
	}
	if cfg.ProposerURL != "" {
		top = append(top, runconfig.Pair{Key: "proposer-url", Value: cfg.ProposerURL}, runconfig.Pair{Key: "proposer-model", Value: cfg.ProposerModel})
	}
	top = append(top, runconfig.Pair{Key: "harness", Value: cfg.Harness}, runconfig.Pair{Key: "sample-bf16", Value: cfg.SampleBF16})
	if s := cfg.Start; s != nil && (s.Kind == engine.StartFile || s.Kind == engine.StartDir) {
		top = append(top, runconfig.Pair{Key: "model", Value: s.Name})
	}
	if l := cfg.LoRA; l != nil {
		top = append(top, runconfig.Pair{Key: "lora-rank", Value: int64(l.Rank)}, runconfig.Pair{Key: "lora-alpha", Value: l.Alpha},
			runconfig.Pair{Key: "lora-targets", Value: strings.Join(l.Targets, ",")}, runconfig.Pair{Key: "lora-bf16-base", Value: l.BF16Base})
	}
	if p := cfg.PolicyServer; p != nil {
		var urls any = p.URL
		if len(p.URLs) > 1 {
			urls = p.URLs
		}
		top = append(top, runconfig.Pair{Key: "policy-url", Value: urls}, runconfig.Pair{Key: "policy-model", Value: p.Model})
		if p.Adapters != "" {
			top = append(top, runconfig.Pair{Key: "fleet-adapters", Value: p.Adapters})
		}
		if p.ServerAdapters != "" {
			top = append(top, runconfig.Pair{Key: "fleet-server-adapters", Value: p.ServerAdapters})
		}
		if p.SyncEvery > 1 {
			top = append(top, runconfig.Pair{Key: "fleet-sync-every", Value: int64(p.SyncEvery)})
		}
		if p.Concurrency > 0 {
			top = append(top, runconfig.Pair{Key: "policy-concurrency", Value: int64(p.Concurrency)})
		}
		if p.Timeout > 0 {
			top = append(top, runconfig.Pair{Key: "policy-timeout", Value: p.Timeout.String()})
		}
		if p.MaxN > 0 {
			top = append(top, runconfig.Pair{Key: "policy-max-n", Value: int64(p.MaxN)})
		}
	}
	eng := []runconfig.Pair{
		p("threshold", cfg.Threshold), p("prompts_per_step", int64(cfg.PromptsPerStep)), p("group", int64(cfg.Group)),
		p("train_tasks", int64(cfg.TrainTasks)), p("val_tasks", int64(cfg.ValTasks)), p("audit_tasks", int64(cfg.AuditTasks)),
		p("test_tasks", int64(cfg.TestTasks)), p("val_k", int64(cfg.ValK)), p("test_k", int64(cfg.TestK)),
		p("max_new_tokens", int64(cfg.MaxNewTokens)), p("temperature", float64(cfg.Temperature)),
		p("curve_test", cfg.CurveTest), p("curve_k", int64(cfg.CurveK)), p("chosen_only", cfg.ChosenOnly),
		p("sample_kv_bf16", cfg.SampleKVBF16),
	}
	return runconfig.Encode(comment, top, eng)
}

// printRunConfig is 'whale show RUN --config'.
func printRunConfig(w io.Writer, id string, raw []byte) error {
	cfg, err := engine.DecodeConfig(id, raw)
	if err != nil {
		return err
	}
	b, err := configTOML(id, cfg)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// fieldKeys maps the fields engine.Config.Validate names to the file's
// keys that set them, so a value the engine refuses is named by its line.
var fieldKeys = map[string]string{"e": "E", "i": "I", "operator": "weights", "grid_knobs": "grid-knobs", "proposer_url": "proposer-url",
	"policy_server": "policy-url", "sample_bf16": "sample-bf16", "harness_calls": "harness-calls", "harness_passes": "harness-passes",
	"lora": "lora-rank", "max_rounds": "rounds"}

// locate prefixes a refused configuration with the file, line and key
// that set the field it names, when the file set it (and the command
// line did not).
func (c *configFileFlag) locate(err error) error {
	if c.path == "" || err == nil {
		return err
	}
	msg := err.Error()
	const mark = "config field "
	i := strings.Index(msg, mark)
	if i < 0 {
		return err
	}
	field, _, _ := strings.Cut(msg[i+len(mark):], ":")
	key := field
	if k, ok := fieldKeys[field]; ok {
		key = k
	}
	for _, e := range c.file.Entries {
		if (e.Table == "" && e.Key == key && c.set[key]) || (e.Table == runconfig.EngineTable && e.Key == field) {
			return usageError{fmt.Errorf("%s (%w)", c.file.Errorf(e, "refused"), err)}
		}
	}
	return err
}
