package main

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"whale/core/pretrain"
)

func init() { register(newPretrainCmd) }

func newPretrainCmd() *cobra.Command {
	o := pretrain.DefaultOptions()
	var promptWeight float64
	var asJSON bool
	c := &cobra.Command{
		Use:   "pretrain --out FILE",
		Short: "Train the base model from scratch on demonstrations built from the domains' train splits",
		Long: "Builds a demonstration corpus from the train splits of math, searchqa and chess (never val, audit or\n" +
			"test) by running a scripted demonstrator through h0 and variants of its SEARCH_SPACE, then trains the\n" +
			"preset model on it. A resume point (weights, optimizer state, step) is written atomically beside FILE\n" +
			"as FILE.resume every --checkpoint-every steps, and FILE holds the model so far; --resume continues.\n" +
			"The same seed and settings on the same machine type give the same bytes, resumed or not.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkPretrain(&o); err != nil {
				return err
			}
			if cmd.Flags().Changed("prompt-weight") {
				if !(promptWeight >= 0 && promptWeight <= 1) {
					return usageError{fmt.Errorf("--prompt-weight %v outside [0, 1]", promptWeight)}
				}
				o.Corpus.Mix.PromptWeight = float32(promptWeight)
			}
			o.Log = cmd.ErrOrStderr()
			res, err := pretrain.Train(cmd.Context(), o)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if asJSON {
				return printJSON(w, map[string]any{"out": o.Out, "steps": res.Steps, "done": res.Done, "corpus_hash": res.CorpusHash,
					"loss": res.Loss, "corpus": res.Stats, "params": o.Config.NumParams()})
			}
			fmt.Fprintf(w, "%s: %d steps (done %v), loss %.4f, corpus %s, %d parameters\n", o.Out, res.Steps, res.Done, res.Loss, res.CorpusHash[:12], o.Config.NumParams())
			return nil
		},
	}
	registerPretrainFlags(c.Flags(), &o, &promptWeight)
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	return c
}

// registerPretrainFlags binds whale pretrain's flags to the options they
// set (defaults: pretrain.DefaultOptions's), --prompt-weight apart (it
// applies only when given).
func registerPretrainFlags(f *pflag.FlagSet, o *pretrain.Options, promptWeight *float64) {
	def := pretrain.DefaultOptions()
	mix := &o.Corpus.Mix
	f.StringVar(&o.Out, "out", "", "model file to write (bf16 safetensors); the resume point is FILE.resume")
	f.StringVar(&o.Preset, "preset", def.Preset, "model configuration: base or tiny")
	f.Uint64Var(&o.Seed, "seed", def.Seed, "seed of the initial weights, the corpus and the data order")
	f.Uint64Var(&o.DataSeed, "data-seed", def.DataSeed, "seed of the domains whose train splits feed the corpus")
	f.IntVar(&o.Steps, "steps", def.Steps, "optimizer steps")
	f.IntVar(&o.Batch, "batch", def.Batch, "sequences per optimizer step")
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", def.CheckpointEvery, "write the resume point every N steps (0: only at the end)")
	f.IntVar(&o.Corpus.TasksPerDomain, "tasks", 0, "use only the first N train tasks of each domain (0: all)")
	f.BoolVar(&o.Resume, "resume", false, "continue from FILE.resume if it exists")
	f.StringVar(&o.Init, "init", "", "start from the weights of this file (a model or a .resume point) instead of the seed's initialisation")
	f.Float64Var(promptWeight, "prompt-weight", float64(def.Corpus.Mix.PromptWeight), "loss weight of prompt tokens (completion tokens weigh 1)")
	f.Float64Var(&o.PeakLR, "peak-lr", def.PeakLR, "peak learning rate (cosine decay to a twentieth of it)")
	f.IntVar(&o.Warmup, "warmup", def.Warmup, "warmup steps")
	f.IntVar(&mix.Drills, "drills", def.Corpus.Mix.Drills, "synthetic copy drills added to the corpus")
	f.Float64Var(&mix.DrillRandom, "drill-random", def.Corpus.Mix.DrillRandom, "share of drills that repeat random letters")
	f.BoolVar(&mix.DrillRaw, "drill-raw", false, "random-letter drills as bare 100-letter copies without chat framing")
	f.Float64Var(&mix.DrillRawWords, "drill-raw-words", 0, "with --drill-raw: share of bare copies made of made-up words and numbers instead of letters")
	f.IntVar(&o.ProbeEvery, "probe-every", 100, "log a greedy copy probe (letters, word lists, lookups) every N steps (0: never)")
	f.BoolVar(&mix.DrillRelations, "drill-relations", false, "lookup drills over the kinds of fact passages state (employer, mayor, founder, …), asked in other words")
	f.BoolVar(&mix.DrillRawVary, "drill-raw-vary", false, "with --drill-raw: copies of 8 to 160 letters (a fixed length can be copied by position instead of content)")
	f.BoolVar(&mix.DrillAnswerOnly, "drill-answer-only", false, "no loss on drill prompts")
	f.Float64Var(&mix.NearShare, "near-share", def.Corpus.Mix.NearShare, "share of harness variants near h0 (one to three knobs changed, fragments' REQUIRES met) instead of far (each knob changed with probability 0.5)")
	f.Float64Var(&o.FloorLR, "floor-lr", 0, "learning rate at the end of the cosine (0: a twentieth of --peak-lr; equal to it: constant)")
	f.IntVar(&mix.MaxTokens, "max-tokens", def.Corpus.Mix.MaxTokens, "drop demonstrations longer than this many tokens (at most the preset's max_position_embeddings)")
	f.Var(&domainReps{mix: mix, domain: "chess"}, "chess-reps", "times each chess train task is demonstrated (each time through another harness variant)")
	f.IntVar(&o.StopAfter, "stop-after", 0, "stop (with a resume point) after this many steps of this invocation, as an interruption would")
}

// domainReps binds a flag to one domain's Mix.Reps entry.
type domainReps struct {
	mix    *pretrain.Mix
	domain string
}

func (r *domainReps) String() string {
	if r.mix == nil || r.mix.Reps == nil {
		return "1"
	}
	return strconv.Itoa(r.mix.Reps[r.domain])
}

func (r *domainReps) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 16 {
		return fmt.Errorf("want an integer from 1 to 16, got %q", s)
	}
	reps := maps.Clone(r.mix.Reps)
	if reps == nil {
		reps = map[string]int{}
	}
	reps[r.domain] = n
	r.mix.Reps = reps
	return nil
}

func (r *domainReps) Type() string { return "int" }

// checkPretrain checks the options the flags set and fills in the preset's
// model configuration.
func checkPretrain(o *pretrain.Options) error {
	if o.Out == "" {
		return usageError{fmt.Errorf("--out FILE is required")}
	}
	mk, ok := pretrain.Presets[o.Preset]
	if !ok {
		var names []string
		for n := range pretrain.Presets {
			names = append(names, n)
		}
		sort.Strings(names)
		return usageError{fmt.Errorf("unknown --preset %q (want one of %s)", o.Preset, strings.Join(names, ", "))}
	}
	o.Config = mk()
	mix := o.Corpus.Mix
	switch {
	case o.Steps < 1 || o.Batch < 1 || o.CheckpointEvery < 0 || o.Corpus.TasksPerDomain < 0 || o.StopAfter < 0:
		return usageError{fmt.Errorf("--steps (%d) and --batch (%d) must be positive, --checkpoint-every (%d) and --tasks (%d) not negative", o.Steps, o.Batch, o.CheckpointEvery, o.Corpus.TasksPerDomain)}
	case mix.MaxTokens < 16 || mix.MaxTokens > o.Config.MaxPositionEmbeddings-1:
		return usageError{fmt.Errorf("--max-tokens %d: want 16 to %d (the preset's max_position_embeddings less one)", mix.MaxTokens, o.Config.MaxPositionEmbeddings-1)}
	case o.ProbeEvery < 0:
		return usageError{fmt.Errorf("--probe-every %d is negative", o.ProbeEvery)}
	case mix.Drills < 0:
		return usageError{fmt.Errorf("--drills %d is negative", mix.Drills)}
	case !(mix.DrillRandom >= 0 && mix.DrillRandom <= 1):
		return usageError{fmt.Errorf("--drill-random %v outside [0, 1]", mix.DrillRandom)}
	case !(mix.DrillRawWords >= 0 && mix.DrillRawWords <= 1):
		return usageError{fmt.Errorf("--drill-raw-words %v outside [0, 1]", mix.DrillRawWords)}
	case !(mix.NearShare >= 0 && mix.NearShare <= 1):
		return usageError{fmt.Errorf("--near-share %v outside [0, 1]", mix.NearShare)}
	}
	return nil
}
