package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"whale/core/model"
	"whale/internal/procstat"
	"whale/kernels"
	kbench "whale/kernels/bench"
)

// modelBench is `whale bench model`: sampling and a LoRA step of one
// model shape, with the memory each stage peaks at.
type modelBench struct {
	CPU      string  `json:"cpu"`
	Threads  int     `json:"threads"`
	Kernels  string  `json:"kernels"`
	Preset   string  `json:"preset"`
	Params   int     `json:"params"`
	ReadGBPS float64 `json:"read_gbps"`
	// ReadGBPSWeights is the read bandwidth over a buffer of the bf16
	// weights' size (ReadGBPS sweeps 64 MiB, which the last-level cache
	// can partly hold), measured right before sampling.
	ReadGBPSWeights float64 `json:"read_gbps_weights"`
	// Sample is batch-1 decoding with bf16 weights; SamplePeakRSS the
	// process's peak resident bytes while it ran (the float32 weights,
	// their packed bf16 copy and the KV cache), 0 where not measured.
	Sample        rate  `json:"sample_b1_bf16"`
	SamplePeakRSS int64 `json:"sample_peak_rss_bytes"`
	LoRA          struct {
		Rank          int      `json:"rank"`
		Targets       []string `json:"targets"`
		Adapters      int      `json:"adapter_params"`
		B             int      `json:"batch"`
		T             int      `json:"tokens"`
		StepS         float64  `json:"step_s"`
		TokensPerS    float64  `json:"tokens_per_s"`
		GFLOPS        float64  `json:"gflops"`
		PeakRSSBytes  int64    `json:"peak_rss_bytes"`
		WeightsFrozen bool     `json:"weights_frozen"`
		// BF16Base: the frozen weights were held in bfloat16 only.
		BF16Base bool `json:"bf16_base"`
		// ActivationBytes is the step's activation bound (negative: none).
		ActivationBytes int64 `json:"activation_bytes"`
	} `json:"lora_step"`
}

func newBenchModelCmd() *cobra.Command {
	var asJSON bool
	var preset string
	var threads, rank, B, T, gen, steps, actMB int
	var bf16Base bool
	c := &cobra.Command{
		Use:   "model",
		Short: "Sampling speed (batch 1, bf16) and one LoRA training step of a model shape, with peak memory",
		Long: `Builds a model of --preset with seeded random weights (default: Qwen3-0.6B's shape) and
measures batch-1 decoding with bf16 weights (16-token prompt, --gen tokens) against the
read-bandwidth bound (every weight streamed once per token), then one LoRA training step
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
			r, err := benchModelShape(cmd.ErrOrStderr(), preset, rank, B, T, gen, steps, act, bf16Base)
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
	c.Flags().IntVar(&gen, "gen", 128, "tokens decoded in the sampling measurement")
	c.Flags().IntVar(&steps, "steps", 2, "timed training steps after the warm-up one (0: no training step)")
	c.Flags().IntVar(&actMB, "activation-mb", 0, "bound on the training step's activations in MiB, past which layers recompute their forward pass (0: the trainer's default, 256; negative: keep every layer's)")
	return c
}

func benchModelShape(log io.Writer, preset string, rank, B, T, gen, steps int, activationBytes int64, bf16Base bool) (modelBench, error) {
	r := modelBench{CPU: cpuName(), Threads: kernels.Threads(), Kernels: kernels.KernelName(), Preset: preset}
	cfg, err := model.Preset(preset)
	if err != nil {
		return r, usageError{err}
	}
	r.Params = cfg.NumParams()
	fmt.Fprintln(log, "bench: read bandwidth")
	r.ReadGBPS = kbench.ReadGBPS()
	fmt.Fprintf(log, "bench: building %s (%.0fM parameters, random)\n", preset, float64(r.Params)/1e6)
	m, err := model.BenchModel(nil, cfg)
	if err != nil {
		return r, err
	}
	wb := model.WeightBytes(cfg, true)
	fmt.Fprintf(log, "bench: read bandwidth over %.2f GB (the bf16 weights' size)\n", float64(wb)/1e9)
	r.ReadGBPSWeights = kbench.ReadGBPSOver(wb)
	fmt.Fprintln(log, "bench: sampling, batch 1, bf16")
	debug.FreeOSMemory() // the random initial values, copied into the arena
	procstat.ResetPeakRSS()
	if r.Sample.TokensPerS, err = model.BenchSampleModel(m, 1, 16, gen, true); err != nil {
		return r, err
	}
	r.SamplePeakRSS = procstat.PeakRSS()
	r.Sample.GBPS = r.Sample.TokensPerS * float64(wb) / 1e9
	r.Sample.OfBound = r.Sample.GBPS / r.ReadGBPS
	r.Sample.OfWeightsRead = r.Sample.GBPS / r.ReadGBPSWeights
	// The sampler's packed copy lives outside the Go heap until its
	// cleanup runs after a collection.
	runtime.GC()
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	if steps == 0 {
		return r, nil
	}
	lc := model.LoRAConfig{Rank: rank, Alpha: 2 * float64(rank), Targets: model.LoRATargets, BF16Base: bf16Base}
	if err := m.EnableLoRA(lc, 1); err != nil { // with bf16Base, FreezeBF16 too
		return r, err
	}
	before := weightsHash(m)
	debug.FreeOSMemory() // the float weights FreezeBF16 let go, too
	fmt.Fprintf(log, "bench: LoRA step, rank %d, B %d T %d, bf16 base %v\n", rank, B, T, bf16Base)
	procstat.ResetPeakRSS()
	step, err := model.BenchLoRAStep(m, B, T, steps, activationBytes)
	if err != nil {
		return r, err
	}
	l := &r.LoRA
	l.PeakRSSBytes = procstat.PeakRSS()
	l.Rank, l.Targets, l.B, l.T, l.Adapters = rank, lc.Targets, B, T, len(m.TrainableValues())
	l.StepS = step.Seconds()
	l.TokensPerS = float64(B*T) / l.StepS
	l.GFLOPS = l.TokensPerS * model.LoRAFLOPsPerToken(cfg, T) / 1e9
	l.WeightsFrozen = weightsHash(m) == before
	l.BF16Base = bf16Base
	l.ActivationBytes = activationBytes
	return r, nil
}

// weightsHash is the sha256 of m's weights, read a tensor at a time (a
// copy of the whole model would count in the memory measured).
func weightsHash(m *model.Model) string {
	h := sha256.New()
	buf := make([]byte, 0, 4<<20)
	for _, p := range m.Params() {
		v, _ := m.ReadParam(p.Name)
		for _, x := range v {
			if buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x)); len(buf) == cap(buf) {
				h.Write(buf)
				buf = buf[:0]
			}
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
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
	fmt.Fprintf(w, "read       %.1f GB/s over 64 MiB, %.1f GB/s over the weights' size\n", r.ReadGBPS, r.ReadGBPSWeights)
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
