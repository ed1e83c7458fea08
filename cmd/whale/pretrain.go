package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/pretrain"
)

func init() { register(newPretrainCmd) }

func newPretrainCmd() *cobra.Command {
	def := pretrain.DefaultOptions()
	var out, preset, init string
	var promptWeight, peakLR, drillRandom, floorLR, drillRawWords float64
	var probeEvery int
	var drillRelations bool
	var nearShare float64
	var drillAnswerOnly, drillRaw, drillRawVary bool
	var warmup, stopAfter, drills int
	var seed, dataSeed uint64
	var steps, batch, every, tasks int
	var resume, asJSON bool
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
			if out == "" {
				return usageError{fmt.Errorf("--out FILE is required")}
			}
			mk, ok := pretrain.Presets[preset]
			if !ok {
				var names []string
				for n := range pretrain.Presets {
					names = append(names, n)
				}
				sort.Strings(names)
				return usageError{fmt.Errorf("unknown --preset %q (want one of %s)", preset, strings.Join(names, ", "))}
			}
			if steps < 1 || batch < 1 || every < 0 || tasks < 0 || stopAfter < 0 {
				return usageError{fmt.Errorf("--steps (%d) and --batch (%d) must be positive, --checkpoint-every (%d) and --tasks (%d) not negative", steps, batch, every, tasks)}
			}
			o := pretrain.DefaultOptions()
			if probeEvery < 0 {
				return usageError{fmt.Errorf("--probe-every %d is negative", probeEvery)}
			}
			o.ProbeEvery = probeEvery
			o.Out, o.Preset, o.Config, o.Seed, o.DataSeed = out, preset, mk(), seed, dataSeed
			o.Steps, o.Batch, o.CheckpointEvery, o.Resume = steps, batch, every, resume
			o.Corpus.TasksPerDomain = tasks
			o.Init, o.PeakLR, o.Warmup, o.StopAfter = init, peakLR, warmup, stopAfter
			if drills < 0 {
				return usageError{fmt.Errorf("--drills %d is negative", drills)}
			}
			o.Corpus.Mix.Drills = drills
			if !(drillRandom >= 0 && drillRandom <= 1) {
				return usageError{fmt.Errorf("--drill-random %v outside [0, 1]", drillRandom)}
			}
			o.Corpus.Mix.DrillRandom = drillRandom
			o.Corpus.Mix.DrillAnswerOnly = drillAnswerOnly
			o.Corpus.Mix.DrillRaw = drillRaw
			o.Corpus.Mix.DrillRawVary = drillRawVary
			o.Corpus.Mix.DrillRelations = drillRelations
			if !(drillRawWords >= 0 && drillRawWords <= 1) {
				return usageError{fmt.Errorf("--drill-raw-words %v outside [0, 1]", drillRawWords)}
			}
			o.Corpus.Mix.DrillRawWords = drillRawWords
			if !(nearShare >= 0 && nearShare <= 1) {
				return usageError{fmt.Errorf("--near-share %v outside [0, 1]", nearShare)}
			}
			o.Corpus.Mix.NearShare = nearShare
			o.FloorLR = floorLR
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
				return printJSON(w, map[string]any{"out": out, "steps": res.Steps, "done": res.Done, "corpus_hash": res.CorpusHash,
					"loss": res.Loss, "corpus": res.Stats, "params": o.Config.NumParams()})
			}
			fmt.Fprintf(w, "%s: %d steps (done %v), loss %.4f, corpus %s, %d parameters\n", out, res.Steps, res.Done, res.Loss, res.CorpusHash[:12], o.Config.NumParams())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "model file to write (bf16 safetensors); the resume point is FILE.resume")
	f.StringVar(&preset, "preset", def.Preset, "model configuration: base or tiny")
	f.Uint64Var(&seed, "seed", def.Seed, "seed of the initial weights, the corpus and the data order")
	f.Uint64Var(&dataSeed, "data-seed", def.DataSeed, "seed of the domains whose train splits feed the corpus")
	f.IntVar(&steps, "steps", def.Steps, "optimizer steps")
	f.IntVar(&batch, "batch", def.Batch, "sequences per optimizer step")
	f.IntVar(&every, "checkpoint-every", def.CheckpointEvery, "write the resume point every N steps (0: only at the end)")
	f.IntVar(&tasks, "tasks", 0, "use only the first N train tasks of each domain (0: all)")
	f.BoolVar(&resume, "resume", false, "continue from FILE.resume if it exists")
	f.StringVar(&init, "init", "", "start from the weights of this file (a model or a .resume point) instead of the seed's initialisation")
	f.Float64Var(&promptWeight, "prompt-weight", float64(def.Corpus.Mix.PromptWeight), "loss weight of prompt tokens (completion tokens weigh 1)")
	f.Float64Var(&peakLR, "peak-lr", def.PeakLR, "peak learning rate (cosine decay to a twentieth of it)")
	f.IntVar(&warmup, "warmup", def.Warmup, "warmup steps")
	f.IntVar(&drills, "drills", def.Corpus.Mix.Drills, "synthetic copy drills added to the corpus")
	f.Float64Var(&drillRandom, "drill-random", def.Corpus.Mix.DrillRandom, "share of drills that repeat random letters")
	f.BoolVar(&drillRaw, "drill-raw", false, "random-letter drills as bare 100-letter copies without chat framing")
	f.Float64Var(&drillRawWords, "drill-raw-words", 0, "with --drill-raw: share of bare copies made of made-up words and numbers instead of letters")
	f.IntVar(&probeEvery, "probe-every", 100, "log a greedy copy probe (letters, word lists, lookups) every N steps (0: never)")
	f.BoolVar(&drillRelations, "drill-relations", false, "lookup drills over the kinds of fact passages state (employer, mayor, founder, …), asked in other words")
	f.BoolVar(&drillRawVary, "drill-raw-vary", false, "with --drill-raw: copies of 8 to 160 letters (a fixed length can be copied by position instead of content)")
	f.BoolVar(&drillAnswerOnly, "drill-answer-only", false, "no loss on drill prompts")
	f.Float64Var(&nearShare, "near-share", def.Corpus.Mix.NearShare, "share of harness variants near h0 (one to three knobs changed, fragments' REQUIRES met) instead of far (each knob changed with probability 0.5)")
	f.Float64Var(&floorLR, "floor-lr", 0, "learning rate at the end of the cosine (0: a twentieth of --peak-lr; equal to it: constant)")
	f.IntVar(&stopAfter, "stop-after", 0, "stop (with a resume point) after this many steps of this invocation, as an interruption would")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}
