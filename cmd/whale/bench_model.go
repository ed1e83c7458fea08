package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"whale/core/experiments"
	"whale/core/model"
	"whale/kernels"
)

type modelBench = experiments.ModelBench

func newBenchModelCmd() *cobra.Command {
	var asJSON bool
	var preset string
	var threads, rank, B, T, gen, rounds, steps, actMB int
	var bf16Base bool
	c := &cobra.Command{
		Use:   "model",
		Short: "Sampling speed (batch 1, bf16) and one LoRA training step of a model shape, with peak memory",
		Long: `Builds a model of --preset with seeded random weights (default: Qwen3-0.6B's shape) and
measures batch-1 decoding with bf16 weights (16-token prompt, --gen tokens) against the
read-bandwidth bound (every weight streamed once per token): --rounds runs, each right after
a read sweep over the weights' size, so that each run is held to the bandwidth of its own
moment; the figures are the medians. Then one LoRA training step
(--rank on every projection, --batch × --tokens) after a warm-up step. Each stage's peak
resident memory is measured on Linux (VmHWM, reset between stages). The 0.6B shape takes
about 3 GB to build and a few minutes to measure.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			act := activationBytes(actMB)
			if act == 0 {
				act = model.DefaultActivationBytes // reported as the bound it is
			}
			if _, err := model.Preset(preset); err != nil {
				return usageError{fmt.Errorf("--preset: %w", err)}
			}
			if rounds < 1 {
				return usageError{fmt.Errorf("--rounds %d: want at least 1", rounds)}
			}
			r, err := experiments.BenchModelShape(cmd.ErrOrStderr(), preset, rank, B, T, gen, rounds, steps, act, bf16Base)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			printModelBench(cmd.OutOrStdout(), r)
			return nil
		},
	}
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	c.Flags().StringVar(&preset, "preset", "qwen3-0.6b", "model shape: one of the model presets")
	threadsFlag(c.Flags(), &threads)
	c.Flags().IntVar(&rank, "rank", 16, "LoRA rank of the training step")
	c.Flags().BoolVar(&bf16Base, "bf16-base", false, "hold the LoRA step's frozen weights in bfloat16 only (whale run --lora-bf16-base)")
	c.Flags().IntVar(&B, "batch", 4, "sequences in the training step")
	c.Flags().IntVar(&T, "tokens", 256, "tokens per sequence in the training step")
	c.Flags().IntVar(&gen, "gen", 128, "tokens decoded in each sampling run")
	c.Flags().IntVar(&rounds, "rounds", 3, "sampling runs, each right after its own read sweep over the weights' size (the figures are their medians)")
	c.Flags().IntVar(&steps, "steps", 2, "timed training steps after the warm-up one (0: no training step)")
	c.Flags().IntVar(&actMB, "activation-mb", 0, "bound on the training step's activations in MiB, past which layers recompute their forward pass (0: the trainer's default, 256; negative: keep every layer's)")
	return c
}

func printModelBench(w io.Writer, r modelBench) {
	gb := func(b int64) string {
		if b == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.2f GB", float64(b)/1e9)
	}
	fmt.Fprintf(w, "cpu        %s, %d threads, kernels %s\n", r.CPU, r.Threads, r.Kernels)
	fmt.Fprintf(w, "model      %s, %.1fM parameters (random weights)\n", r.Preset, float64(r.Params)/1e6)
	fmt.Fprintf(w, "read       %.1f GB/s over 64 MiB, %.1f GB/s over the weights' size (median of %d sweeps)\n", r.ReadGBPS, r.ReadGBPSWeights, len(r.Rounds))
	for i, s := range r.Rounds {
		fmt.Fprintf(w, "round %-4d sweep %.1f GB/s, then %.2f tokens/s: %.1f %% of it\n", i+1, s.ReadGBPSWeights, s.TokensPerS, 100*s.OfWeightsRead)
	}
	fmt.Fprintf(w, "sample     batch 1 bf16: %.2f tokens/s (%.1f GB/s, %.1f %% of the 64 MiB read, %.1f %% of the weights-sized one); peak memory %s\n",
		r.Sample.TokensPerS, r.Sample.GBPS, 100*r.Sample.OfBound, 100*r.Sample.OfWeightsRead, gb(r.SamplePeakRSS))
	l := r.LoRA
	if l.StepS == 0 {
		return // --steps 0
	}
	act := "unbounded"
	if l.ActivationBytes >= 0 {
		act = fmt.Sprintf("≤ %d MiB", l.ActivationBytes>>20)
	}
	base := "float32"
	if l.BF16Base {
		base = "bfloat16"
	}
	fmt.Fprintf(w, "LoRA step  rank %d on %d projections (%.1fM adapter parameters) over a %s base, B %d × T %d, activations %s: %.2f s (%.0f tokens/s, %.1f GFLOP/s); peak memory %s; weights frozen: %v\n",
		l.Rank, len(l.Targets), float64(l.Adapters)/1e6, base, l.B, l.T, act, l.StepS, l.TokensPerS, l.GFLOPS, gb(l.PeakRSSBytes), l.WeightsFrozen)
}
