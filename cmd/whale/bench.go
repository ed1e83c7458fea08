package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"whale/core/experiments"
	"whale/kernels"
)

func init() { register(newBenchCmd) }

func newBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Measure: the engine's speed (engine), a model shape's sampling and LoRA step (model), a run's throughput (rollouts), the conditions against each other (conditions)",
	}
	c.AddCommand(newBenchEngineCmd(), newBenchModelCmd(), newBenchConditionsCmd(), newBenchRolloutsCmd(), newBenchPlanCmd())
	return c
}

// The figures' types and measurements live in core/experiments (speed.go);
// this file parses the flags and prints them.
type (
	gemmFigure  = experiments.GemmFigure
	rate        = experiments.Rate
	engineBench = experiments.EngineBench
)

func newBenchEngineCmd() *cobra.Command {
	var asJSON, quick bool
	var threads int
	var backend string
	c := &cobra.Command{
		Use:   "engine",
		Short: "FMA peak, read bandwidth, GEMM GFLOP/s, training and sampling speed of the CPU engine",
		Long: `Measures, on this machine: the fp32 FMA peak of the widest vectors the kernels
use and the memory read bandwidth (the two bounds); GEMM GFLOP/s for the transformer
shapes (M=1024; K,N in 256, 512, 704, 768; layouts NN, NT, TN); a training step of
bench-small (B 8, T 128); sampling tokens/s of bench-small at batch 1 (float32 and
bf16 weights) and 64 and of the 110M shape at batch 1 with bf16 weights (16-token prompt, 256 generated;
each the median of 7 generations on one model, 4 at batch 64 and for the 110M shape, with their spread).
GEMM and training are given as a fraction of the FMA peak, 110M sampling as a
fraction of the read bandwidth. Progress goes to stderr. Takes about a minute (--quick: a few seconds, rough).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			be, err := kernels.OpenBackend(backend)
			if err != nil {
				return usageError{fmt.Errorf("--backend: %w", err)}
			}
			r, err := experiments.BenchEngine(cmd.ErrOrStderr(), be, quick)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			printEngineBench(cmd.OutOrStdout(), r)
			return nil
		},
	}
	jsonFlag(c.Flags(), &asJSON, jsonObject)
	c.Flags().BoolVar(&quick, "quick", false, "shorter measurements (rough figures, for smoke tests)")
	threadsFlag(c.Flags(), &threads)
	c.Flags().StringVar(&backend, "backend", "cpu", "where the ops run: "+backendChoices())
	return c
}

func printEngineBench(w io.Writer, r engineBench) {
	if r.Device != "" {
		fmt.Fprintf(w, "backend    %s on %s (the CPU's bounds and fractions are not measured)\n", r.Backend, r.Device)
	} else {
		fmt.Fprintf(w, "cpu        %s, %d threads, kernels %s\n", r.CPU, r.Threads, r.Kernels)
		fmt.Fprintf(w, "FMA peak   %.1f GFLOP/s (%d-bit FMAs)\n", r.PeakGFLOPS, r.PeakBits)
		fmt.Fprintf(w, "read       %.1f GB/s over 64 MiB, %.1f GB/s over the 110M weights' 220 MB (median of %d sweeps, each right before a 110M run)\n", r.ReadGBPS, r.ReadGBPS110M, len(r.Rounds110M))
	}
	of := func(f float64) string {
		if f == 0 {
			return ""
		}
		return fmt.Sprintf("%5.1f %%", 100*f)
	}
	fmt.Fprintln(w, "GEMM (M=1024)   K     N   GFLOP/s  of peak")
	for _, g := range r.Gemm {
		fmt.Fprintf(w, "  %-12s %4d  %4d  %7.1f  %s\n", g.Layout, g.K, g.N, g.GFLOPS, of(g.OfPeak))
	}
	fmt.Fprintf(w, "train      bench-small B8 T128: %.0f tokens/s, %.1f GFLOP/s%s\n", r.Train.TokensPerS, r.Train.GFLOPS, ofText(r.Train.OfBound, "of peak"))
	fmt.Fprintf(w, "sample     bench-small batch 1: %.0f tokens/s%s\n", r.SampleB1.TokensPerS, spread(r.SampleB1, "%.0f"))
	fmt.Fprintf(w, "sample     bench-small batch 1, bf16 weights: %.0f tokens/s%s\n", r.SampleB1BF16.TokensPerS, spread(r.SampleB1BF16, "%.0f"))
	fmt.Fprintf(w, "sample     bench-small batch 64: %.0f tokens/s%s\n", r.SampleB64.TokensPerS, spread(r.SampleB64, "%.0f"))
	s := r.Sample110MB1
	bounds := ""
	if s.OfBound > 0 {
		bounds = fmt.Sprintf(", %.1f %% of the 64 MiB read, %.1f %% of the weights-sized one", 100*s.OfBound, 100*s.OfWeightsRead)
	}
	fmt.Fprintf(w, "sample     110M bf16 batch 1: %.1f tokens/s%s (%.1f GB/s%s)\n", s.TokensPerS, spread(s, "%.1f"), s.GBPS, bounds)
}

// spread is ", median of N: min–max" for a figure of several generations,
// or nothing for one.
func spread(r rate, num string) string {
	if r.Reps <= 1 {
		return ""
	}
	return fmt.Sprintf(" (median of %d: "+num+"–"+num+")", r.Reps, r.MinTokensPerS, r.MaxTokensPerS)
}

// ofText is " (f % of what)", or nothing when f was not measured.
func ofText(f float64, what string) string {
	if f == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.1f %% %s)", 100*f, what)
}
