package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"whale/core/model"
	"whale/kernels"
	kbench "whale/kernels/bench"
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

type gemmFigure struct {
	M      int     `json:"m"`
	K      int     `json:"k"`
	N      int     `json:"n"`
	Layout string  `json:"layout"`
	GFLOPS float64 `json:"gflops"`
	// OfPeak is GFLOPS over the FMA peak.
	OfPeak float64 `json:"of_peak,omitempty"`
}

// rate is one training or sampling figure. OfBound is GFLOPS over the FMA
// peak (training) or GBPS over the read bandwidth of a 64 MiB sweep
// (weight-streaming sampling); absent where neither bounds the figure.
// OfWeightsRead is GBPS over a sweep as large as the weights streamed.
//
// A sampling figure is the median of Reps generations on one model (a
// generation of 256 tokens takes tens of milliseconds at bench-small's
// size, and one is at the mercy of whatever else shares the machine's
// caches); MinTokensPerS and MaxTokensPerS give their spread.
type rate struct {
	TokensPerS    float64 `json:"tokens_per_s"`
	Reps          int     `json:"reps,omitempty"`
	MinTokensPerS float64 `json:"min_tokens_per_s,omitempty"`
	MaxTokensPerS float64 `json:"max_tokens_per_s,omitempty"`
	GFLOPS        float64 `json:"gflops,omitempty"`
	GBPS          float64 `json:"gbps,omitempty"`
	OfBound       float64 `json:"of_bound,omitempty"`
	OfWeightsRead float64 `json:"of_read_weights,omitempty"`
}

type engineBench struct {
	// Backend is the backend measured ("cpu/float32", "cuda/float32");
	// Device names its GPU. The peak, the read sweeps and the fractions
	// of them are the CPU's alone.
	Backend string `json:"backend"`
	Device  string `json:"device,omitempty"`
	CPU     string `json:"cpu"`
	Threads int    `json:"threads"`
	Kernels string `json:"kernels"`
	// PeakGFLOPS is the fp32 FMA peak of the widest vectors the kernels
	// use, PeakBits wide; ReadGBPS the measured memory read bandwidth.
	PeakGFLOPS float64 `json:"peak_gflops,omitempty"`
	PeakBits   int     `json:"peak_bits,omitempty"`
	ReadGBPS   float64 `json:"read_gbps,omitempty"`
	// ReadGBPS110M is the read bandwidth over a buffer of the 110M
	// model's bf16 weights (220 MB), the bound of Sample110MB1.
	ReadGBPS110M float64      `json:"read_gbps_110m_weights,omitempty"`
	Gemm         []gemmFigure `json:"gemm"`
	Train        rate         `json:"train"`
	SampleB1     rate         `json:"sample_b1"`
	// SampleB1BF16 is SampleB1 with the weights read as bf16: half the
	// bytes a token streams, as Sample110MB1 samples.
	SampleB1BF16 rate `json:"sample_b1_bf16"`
	SampleB64    rate `json:"sample_b64"`
	Sample110MB1 rate `json:"sample_110m_b1"`
}

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
			r, err := benchEngine(cmd.ErrOrStderr(), be, quick)
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

// benchEngine measures be; on the CPU backend also the bounds (peak, read
// sweeps) and each figure's fraction of its bound.
func benchEngine(log io.Writer, be kernels.Backend, quick bool) (engineBench, error) {
	_, onCPU := be.(*kernels.CPU[float32])
	r := engineBench{Backend: be.Name(), CPU: cpuName(), Threads: kernels.Threads(), Kernels: kernels.KernelName()}
	if d, ok := be.(interface{ DeviceName() string }); ok {
		r.Device = d.DeviceName()
	}
	dur, gen, reps, sizes := 400*time.Millisecond, 256, 7, []int{256, 512, 704, 768}
	if quick {
		dur, gen, reps, sizes = 20*time.Millisecond, 16, 1, []int{256}
	}
	fraction := func(v, bound float64) float64 {
		if !onCPU || bound == 0 {
			return 0
		}
		return v / bound
	}
	if onCPU {
		fmt.Fprintln(log, "bench: FMA peak, read bandwidth")
		r.PeakGFLOPS, r.PeakBits = kbench.PeakGFLOPS(), kbench.PeakVectorBits()
		r.ReadGBPS = kbench.ReadGBPS()
	}
	fmt.Fprintln(log, "bench: GEMM")
	for _, layout := range []kernels.Layout{kernels.NN, kernels.NT, kernels.TN} {
		for _, k := range sizes {
			for _, n := range sizes {
				var g float64
				var err error
				if onCPU { // the kernels' own figure, without the interface
					g = kbench.Gemm(layout, 1024, k, n, dur)
				} else if g, err = kbench.GemmOn(be, layout, 1024, k, n, dur); err != nil {
					return r, err
				}
				r.Gemm = append(r.Gemm, gemmFigure{M: 1024, K: k, N: n, Layout: layout.String(), GFLOPS: g, OfPeak: fraction(g, r.PeakGFLOPS)})
			}
		}
	}
	small, err := model.Preset("bench-small")
	if err != nil {
		return r, err
	}
	fmt.Fprintln(log, "bench: training step, bench-small B 8 T 128")
	if r.Train.TokensPerS, r.Train.GFLOPS, err = model.BenchTrain(be, small, 8, 128, 5*dur); err != nil {
		return r, err
	}
	r.Train.OfBound = fraction(r.Train.GFLOPS, r.PeakGFLOPS)
	sm, err := model.BenchModel(be, small)
	if err != nil {
		return r, err
	}
	fmt.Fprintln(log, "bench: sampling, bench-small batch 1")
	if r.SampleB1, err = sampleRate(sm, 1, gen, false, reps); err != nil {
		return r, err
	}
	fmt.Fprintln(log, "bench: sampling, bench-small batch 1, bf16 weights")
	if r.SampleB1BF16, err = sampleRate(sm, 1, gen, true, reps); err != nil {
		return r, err
	}
	fmt.Fprintln(log, "bench: sampling, bench-small batch 64")
	if r.SampleB64, err = sampleRate(sm, 64, gen, false, (reps+1)/2); err != nil {
		return r, err
	}
	big, err := model.Preset("110m")
	if err != nil {
		return r, err
	}
	wb := model.WeightBytes(big, true)
	if onCPU {
		fmt.Fprintln(log, "bench: read bandwidth over the 110M bf16 weights' size")
		r.ReadGBPS110M = kbench.ReadGBPSOver(wb)
	}
	fmt.Fprintln(log, "bench: sampling, 110M bf16 batch 1")
	bm, err := model.BenchModel(be, big)
	if err != nil {
		return r, err
	}
	if r.Sample110MB1, err = sampleRate(bm, 1, gen, true, (reps+1)/2); err != nil {
		return r, err
	}
	r.Sample110MB1.GBPS = r.Sample110MB1.TokensPerS * float64(wb) / 1e9
	r.Sample110MB1.OfBound = fraction(r.Sample110MB1.GBPS, r.ReadGBPS)
	r.Sample110MB1.OfWeightsRead = fraction(r.Sample110MB1.GBPS, r.ReadGBPS110M)
	return r, nil
}

// sampleRate generates gen tokens per sequence of a batch reps times on
// one sampler of m (model.BenchSampleRuns) and returns the median
// tokens/s, with the spread.
func sampleRate(m *model.Model, batch, gen int, bf16 bool, reps int) (rate, error) {
	all, err := model.BenchSampleRuns(m, batch, 16, gen, bf16, max(1, reps))
	if err != nil {
		return rate{}, err
	}
	slices.Sort(all)
	med := all[len(all)/2]
	if len(all)%2 == 0 {
		med = (all[len(all)/2-1] + all[len(all)/2]) / 2
	}
	return rate{TokensPerS: med, Reps: len(all), MinTokensPerS: all[0], MaxTokensPerS: all[len(all)-1]}, nil
}

func printEngineBench(w io.Writer, r engineBench) {
	if r.Device != "" {
		fmt.Fprintf(w, "backend    %s on %s (the CPU's bounds and fractions are not measured)\n", r.Backend, r.Device)
	} else {
		fmt.Fprintf(w, "cpu        %s, %d threads, kernels %s\n", r.CPU, r.Threads, r.Kernels)
		fmt.Fprintf(w, "FMA peak   %.1f GFLOP/s (%d-bit FMAs)\n", r.PeakGFLOPS, r.PeakBits)
		fmt.Fprintf(w, "read       %.1f GB/s over 64 MiB, %.1f GB/s over the 110M weights' 220 MB\n", r.ReadGBPS, r.ReadGBPS110M)
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

// cpuName reads the processor model on Linux; elsewhere it reports the
// architecture.
func cpuName() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				if _, v, ok := strings.Cut(name, ":"); ok {
					return strings.TrimSpace(v)
				}
			}
		}
	}
	return runtime.GOARCH
}
