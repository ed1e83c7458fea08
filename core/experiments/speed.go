package experiments

// The engine's speed: `whale bench engine` (GEMM, training and sampling
// against this machine's bounds) and `whale bench model` (one model
// shape's batch-1 sampling and LoRA step, with their peak memory).

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"whale/core/model"
	"whale/internal/procstat"
	"whale/kernels"
	kbench "whale/kernels/bench"
)

type GemmFigure struct {
	M      int     `json:"m"`
	K      int     `json:"k"`
	N      int     `json:"n"`
	Layout string  `json:"layout"`
	GFLOPS float64 `json:"gflops"`
	// OfPeak is GFLOPS over the FMA peak.
	OfPeak float64 `json:"of_peak,omitempty"`
}

// Rate is one training or sampling figure. OfBound is GFLOPS over the FMA
// peak (training) or GBPS over the read bandwidth of a 64 MiB sweep
// (weight-streaming sampling); absent where neither bounds the figure.
// OfWeightsRead is GBPS over a sweep as large as the weights streamed.
//
// A sampling figure is the median of Reps generations on one model (a
// generation of 256 tokens takes tens of milliseconds at bench-small's
// size, and one is at the mercy of whatever else shares the machine's
// caches); MinTokensPerS and MaxTokensPerS give their spread.
type Rate struct {
	TokensPerS    float64 `json:"tokens_per_s"`
	Reps          int     `json:"reps,omitempty"`
	MinTokensPerS float64 `json:"min_tokens_per_s,omitempty"`
	MaxTokensPerS float64 `json:"max_tokens_per_s,omitempty"`
	GFLOPS        float64 `json:"gflops,omitempty"`
	GBPS          float64 `json:"gbps,omitempty"`
	OfBound       float64 `json:"of_bound,omitempty"`
	OfWeightsRead float64 `json:"of_read_weights,omitempty"`
}

// SweepRound is one round of a batch-1 decoding figure of `whale bench
// model` or `whale bench engine` (110M): a read sweep over the weights'
// size, then one decoding run, and the run's fraction of the sweep.
type SweepRound struct {
	ReadGBPSWeights float64 `json:"read_gbps_weights"`
	TokensPerS      float64 `json:"tokens_per_s"`
	OfWeightsRead   float64 `json:"of_read_weights"`
}

type EngineBench struct {
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
	// model's bf16 weights (220 MB), the bound of Sample110MB1: the median
	// of Rounds110M's sweeps, each right before one of its runs (its
	// OfWeightsRead the median of their fractions).
	ReadGBPS110M float64      `json:"read_gbps_110m_weights,omitempty"`
	Rounds110M   []SweepRound `json:"rounds_110m,omitempty"`
	Gemm         []GemmFigure `json:"gemm"`
	Train        Rate         `json:"train"`
	SampleB1     Rate         `json:"sample_b1"`
	// SampleB1BF16 is SampleB1 with the weights read as bf16: half the
	// bytes a token streams, as Sample110MB1 samples.
	SampleB1BF16 Rate `json:"sample_b1_bf16"`
	SampleB64    Rate `json:"sample_b64"`
	Sample110MB1 Rate `json:"sample_110m_b1"`
}

// ModelBench is `whale bench model`: sampling and a LoRA step of one
// model shape, with the memory each stage peaks at.
type ModelBench struct {
	CPU      string  `json:"cpu"`
	Threads  int     `json:"threads"`
	Kernels  string  `json:"kernels"`
	Preset   string  `json:"preset"`
	Params   int     `json:"params"`
	ReadGBPS float64 `json:"read_gbps"`
	// ReadGBPSWeights is the read bandwidth over a buffer of the bf16
	// weights' size (ReadGBPS sweeps 64 MiB, which the last-level cache
	// can partly hold): the median of the sweeps of Rounds.
	ReadGBPSWeights float64 `json:"read_gbps_weights"`
	// Sample is batch-1 decoding with bf16 weights: its tokens/s the
	// median of Rounds', OfWeightsRead the median of their fractions;
	// SamplePeakRSS the process's peak resident bytes while it ran (the
	// float32 weights, their packed bf16 copy and the KV cache; not the
	// sweeps' buffer), 0 where not measured.
	Sample        Rate  `json:"sample_b1_bf16"`
	SamplePeakRSS int64 `json:"sample_peak_rss_bytes"`
	// Rounds pairs each decoding run with a weights-sized sweep right
	// before it: a machine whose memory bandwidth moves between seconds
	// (a VM's neighbours) gives each run the bound of its own moment.
	Rounds []SweepRound `json:"rounds"`
	LoRA   struct {
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

// BenchEngine is `whale bench engine`: it measures be; on the CPU backend also the bounds (peak, read
// sweeps) and each figure's fraction of its bound.
func BenchEngine(log io.Writer, be kernels.Backend, quick bool) (EngineBench, error) {
	_, onCPU := be.(*kernels.CPU[float32])
	r := EngineBench{Backend: be.Name(), CPU: CPUName(), Threads: kernels.Threads(), Kernels: kernels.KernelName()}
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
				r.Gemm = append(r.Gemm, GemmFigure{M: 1024, K: k, N: n, Layout: layout.String(), GFLOPS: g, OfPeak: fraction(g, r.PeakGFLOPS)})
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
	if r.SampleB1, err = SampleRate(sm, 1, gen, false, reps); err != nil {
		return r, err
	}
	fmt.Fprintln(log, "bench: sampling, bench-small batch 1, bf16 weights")
	if r.SampleB1BF16, err = SampleRate(sm, 1, gen, true, reps); err != nil {
		return r, err
	}
	fmt.Fprintln(log, "bench: sampling, bench-small batch 64")
	if r.SampleB64, err = SampleRate(sm, 64, gen, false, (reps+1)/2); err != nil {
		return r, err
	}
	big, err := model.Preset("110m")
	if err != nil {
		return r, err
	}
	wb := model.WeightBytes(big, true)
	bm, err := model.BenchModel(be, big)
	if err != nil {
		return r, err
	}
	if onCPU {
		fmt.Fprintln(log, "bench: sampling, 110M bf16 batch 1, each run after a read sweep over the weights' size")
		if r.Sample110MB1, r.ReadGBPS110M, r.Rounds110M, _, err = sampleAgainstSweeps(bm, wb, gen, (reps+1)/2); err != nil {
			return r, err
		}
	} else {
		fmt.Fprintln(log, "bench: sampling, 110M bf16 batch 1")
		if r.Sample110MB1, err = SampleRate(bm, 1, gen, true, (reps+1)/2); err != nil {
			return r, err
		}
		r.Sample110MB1.GBPS = r.Sample110MB1.TokensPerS * float64(wb) / 1e9
	}
	r.Sample110MB1.OfBound = fraction(r.Sample110MB1.GBPS, r.ReadGBPS)
	return r, nil
}

// SampleRate generates gen tokens per sequence of a batch reps times on
// one sampler of m (model.BenchSampleRuns) and returns the median
// tokens/s, with the spread.
func SampleRate(m *model.Model, batch, gen int, bf16 bool, reps int) (Rate, error) {
	all, err := model.BenchSampleRuns(m, batch, 16, gen, bf16, max(1, reps))
	if err != nil {
		return Rate{}, err
	}
	return Rate{TokensPerS: median(all), Reps: len(all), MinTokensPerS: slices.Min(all), MaxTokensPerS: slices.Max(all)}, nil
}

// sampleAgainstSweeps decodes gen tokens at batch 1 from m's bf16 weights
// (wb bytes a token) rounds times on one sampler, each run right after a
// read sweep over wb bytes, and returns the median tokens/s (with its
// GB/s and the median of the runs' fractions of their sweeps), the median
// sweep, the rounds, and the process's peak resident bytes over the
// sampler's warm-up and runs (the sweeps' buffer left out: it is unmapped
// before a run starts). A machine whose bandwidth moves between seconds
// (a VM's neighbours) so holds each run to the bound of its own moment.
func sampleAgainstSweeps(m *model.Model, wb int64, gen, rounds int) (Rate, float64, []SweepRound, int64, error) {
	var sweeps []float64
	var peak int64
	sweep := func() {
		peak = max(peak, procstat.PeakRSS()) // the run before
		sweeps = append(sweeps, kbench.ReadGBPSOver(wb))
		procstat.ResetPeakRSS()
	}
	procstat.ResetPeakRSS()
	runs, err := model.BenchSampleWith(m, model.SamplerOptions{BF16: true, PrefixCacheBytes: -1}, 1, 16, gen, rounds, sweep)
	if err != nil {
		return Rate{}, 0, nil, 0, err
	}
	peak = max(peak, procstat.PeakRSS())
	rs := make([]SweepRound, len(runs))
	fractions := make([]float64, len(runs))
	for i, tps := range runs {
		fractions[i] = tps * float64(wb) / 1e9 / sweeps[i]
		rs[i] = SweepRound{ReadGBPSWeights: sweeps[i], TokensPerS: tps, OfWeightsRead: fractions[i]}
	}
	rate := Rate{TokensPerS: median(runs), Reps: len(runs), MinTokensPerS: slices.Min(runs), MaxTokensPerS: slices.Max(runs), OfWeightsRead: median(fractions)}
	rate.GBPS = rate.TokensPerS * float64(wb) / 1e9
	return rate, median(sweeps), rs, peak, nil
}

// median returns the median of xs (the mean of the middle two for an even
// count), leaving xs as it was.
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// BenchModelShape is `whale bench model`: batch-1 bf16 sampling of a
// random model of preset's shape, then steps LoRA steps (rank, B × T
// tokens), each with the peak resident memory of its stage.
func BenchModelShape(log io.Writer, preset string, rank, B, T, gen, rounds, steps int, activationBytes int64, bf16Base bool) (ModelBench, error) {
	r := ModelBench{CPU: CPUName(), Threads: kernels.Threads(), Kernels: kernels.KernelName(), Preset: preset}
	cfg, err := model.Preset(preset)
	if err != nil {
		return r, err
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
	fmt.Fprintf(log, "bench: %d rounds of a read sweep over %.2f GB (the bf16 weights' size), then batch-1 bf16 sampling\n", rounds, float64(wb)/1e9)
	debug.FreeOSMemory() // the random initial values, copied into the arena
	r.Sample, r.ReadGBPSWeights, r.Rounds, r.SamplePeakRSS, err = sampleAgainstSweeps(m, wb, gen, rounds)
	if err != nil {
		return r, err
	}
	r.Sample.OfBound = r.Sample.GBPS / r.ReadGBPS
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
	before := WeightsHash(m)
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
	l.WeightsFrozen = WeightsHash(m) == before
	l.BF16Base = bf16Base
	l.ActivationBytes = activationBytes
	return r, nil
}

// WeightsHash is the sha256 of m's weights, read a tensor at a time (a
// copy of the whole model would count in the memory measured).
func WeightsHash(m *model.Model) string {
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

// CPUName reads the processor model on Linux; elsewhere it reports the
// architecture.
func CPUName() string {
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
