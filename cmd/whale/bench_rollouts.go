package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"whale/core/experiments"
	"whale/data/domains"
	"whale/kernels"
)

func newBenchRolloutsCmd() *cobra.Command {
	var domain string
	var asJSON bool
	var threads int
	var smp experiments.RolloutSampling
	var resumeEvery resumeEveryFlag
	var backend backendFlag
	c := &cobra.Command{
		Use:   "rollouts",
		Short: "Episodes, model calls and tokens per second of a fixed run workload per domain, and where its time goes",
		Long: `Runs one fixed workload per domain with the embedded base model on a scratch store
(the small preset cut to one cycle: val, 4 weight steps of 32 rollouts, a harness phase of
2 iterations, the boundary and final evaluations; the same as
'whale run --headless --preset small --rounds 1 --E 0.125 --I 2') and reports episodes/s,
model calls/s, generated tokens/s, cores busy, and the seconds spent sampling (training
and scoring rollouts), training, evaluating and writing to the store. A few minutes a domain.
With --sample-bf16 the rollouts are sampled from bfloat16 copies of the weights, as in
'whale run --sample-bf16'; with --sample-kv-bf16 their KV caches are bfloat16, as
sample_kv_bf16 in a run's [engine] table.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := []string{domain}
			if domain == "all" {
				names = domains.Names()
			} else if !slices.Contains(domains.Names(), domain) {
				return usageError{fmt.Errorf("--domain %q: want %s or all", domain, strings.Join(domains.Names(), ", "))}
			}
			if err := backend.open(); err != nil {
				return err
			}
			if threads > 0 {
				kernels.SetThreads(threads)
			}
			dir, err := os.MkdirTemp("", "whale-bench-rollouts-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			var out []experiments.RolloutFigures
			for _, name := range names {
				dom, err := domains.Open(name, 1)
				if err != nil {
					return err
				}
				m, err := openModel("") // the embedded model, on --backend
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "bench rollouts: %s\n", name)
				f, err := experiments.BenchRollouts(cmd.Context(), dom, m, dir, resumeEvery.env(), smp)
				if err != nil {
					return err
				}
				out = append(out, f)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			printRolloutBench(cmd.OutOrStdout(), out)
			return nil
		},
	}
	c.Flags().StringVar(&domain, "domain", "all", "math, searchqa, chess or all")
	jsonFlag(c.Flags(), &asJSON, "print one JSON array, a row per domain")
	threadsFlag(c.Flags(), &threads)
	c.Flags().BoolVar(&smp.SampleBF16, "sample-bf16", false, sampleBF16Usage)
	c.Flags().BoolVar(&smp.SampleKVBF16, "sample-kv-bf16", false, "keep the rollouts' KV caches in bfloat16 (sample_kv_bf16): half their memory and the bytes decode attention reads; log-probabilities move (by at most 0.17, 0.002 on average, on the embedded model), so the run differs")
	resumeEvery.register(c.Flags())
	backend.register(c.Flags())
	return c
}

func printRolloutBench(w io.Writer, fs []experiments.RolloutFigures) {
	fmt.Fprintf(w, "%-9s %8s %8s %8s %7s %9s %10s %6s %8s %8s %8s %8s %6s %8s\n", "domain", "episodes", "calls", "seconds",
		"ep/s", "calls/s", "tokens/s", "cores", "sample", "train", "eval", "store", "store%", "peak RSS")
	for _, f := range fs {
		fmt.Fprintf(w, "%-9s %8d %8d %8.1f %7.2f %9.2f %10.0f %6.2f %7.1fs %7.1fs %7.1fs %7.2fs %5.1f%% %6dMB\n", f.Domain, f.Episodes,
			f.ModelCalls, f.Seconds, f.EpisodesPS, f.CallsPS, f.TokensPS, f.CoresBusy, f.SamplingS, f.TrainingS,
			f.EvaluationS, f.StoreS, 100*f.StoreShare, f.PeakRSSBytes>>20)
	}
}
