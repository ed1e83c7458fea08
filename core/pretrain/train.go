package pretrain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/kernels"
)

// BaseConfig is the shipped base model's configuration: byte-level
// vocabulary (259 ids padded to 264), 6 layers of width 256, grouped-query
// attention, about 4.5 M parameters. max_position_embeddings covers the
// longest demonstration (Mix.MaxTokens) and the built-in harnesses'
// CONTEXT_TOKENS plus a completion.
func BaseConfig() model.Config {
	return model.Config{ModelType: "qwen3", VocabSize: 264, HiddenSize: 256, IntermediateSize: 704, NumHiddenLayers: 6,
		NumAttentionHeads: 8, NumKeyValueHeads: 4, HeadDim: 32, RMSNormEps: 1e-6, RopeTheta: 1e5,
		MaxPositionEmbeddings: 2560, TieWordEmbeddings: true, HiddenAct: "silu"}
}

// TinyConfig is a model small enough for tests of the pretraining loop.
func TinyConfig() model.Config {
	return model.Config{ModelType: "qwen3", VocabSize: 264, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e4,
		MaxPositionEmbeddings: 2560, TieWordEmbeddings: true, HiddenAct: "silu"}
}

// Presets names the configurations `whale pretrain --preset` accepts.
var Presets = map[string]func() model.Config{"base": BaseConfig, "tiny": TinyConfig}

// Options configure a pretraining run. Everything that changes the
// result is recorded in the output's metadata and checked on resume.
type Options struct {
	// Out is the model file written (bf16 safetensors); the resume point
	// lives beside it as Out + ".resume".
	Out    string
	Preset string
	Config model.Config
	Seed   uint64
	// DataSeed opens the domains whose train splits feed the corpus.
	DataSeed uint64
	Steps    int
	// Batch is the number of sequences per optimizer step (each its own
	// micro-batch, so no padding is computed).
	Batch int
	// PeakLR, Warmup: AdamW with linear warmup and cosine decay to
	// PeakLR/20 at Steps.
	PeakLR float64
	Warmup int
	// FloorLR is where the cosine ends; 0 means PeakLR/20. Equal to
	// PeakLR it is a constant rate after warmup.
	FloorLR float64
	// CheckpointEvery writes the resume point (and the model so far)
	// every so many steps; 0 means only at the end.
	CheckpointEvery int
	// Resume continues from Out + ".resume" when it exists.
	Resume bool
	// Init, if set, starts from the weights in this safetensors file (a
	// model file or another run's resume point) instead of the seeded
	// initialisation: a continuation run. Its sha256 is recorded.
	Init string
	// Corpus options (Seed and DataSeed are taken from above).
	Corpus CorpusOptions
	// Log receives progress lines; nil means none.
	Log io.Writer
	// ProbeEvery, if positive, logs a copy probe (see Probe) every so
	// many steps and at the end. It reads the model only: the weights
	// written do not depend on it.
	ProbeEvery int
	// StopAfter, if positive, stops after that many steps of this
	// invocation, as an interruption would (tests of resume).
	StopAfter int
}

// DefaultOptions are the settings of the shipped base model.
func DefaultOptions() Options {
	return Options{Preset: "base", Config: BaseConfig(), Seed: 1, DataSeed: 1, Steps: 700, Batch: 8, PeakLR: 2e-3, Warmup: 30,
		CheckpointEvery: 10, Corpus: CorpusOptions{Mix: DefaultMix()}}
}

// resumeSuffix names the resume point beside the output.
const resumeSuffix = ".resume"

// Result reports a finished (or stopped) run.
type Result struct {
	Steps      int
	Done       bool
	CorpusHash string
	Stats      map[string]DomainStats
	Loss       float64
}

// trainRecord is what must match for a resume to continue a run.
type trainRecord struct {
	Preset   string       `json:"preset"`
	Config   model.Config `json:"config"`
	Seed     uint64       `json:"seed"`
	DataSeed uint64       `json:"data_seed"`
	Steps    int          `json:"steps"`
	Batch    int          `json:"batch"`
	PeakLR   float64      `json:"peak_lr"`
	Warmup   int          `json:"warmup"`
	Mix      Mix          `json:"mix"`
	Tasks    int          `json:"tasks_per_domain,omitempty"`
	Init     string       `json:"init_sha256,omitempty"`
	FloorLR  float64      `json:"floor_lr,omitempty"`
}

// Train builds the corpus, then trains from scratch or from the resume
// point, deterministically: the batch of step s is a function of the seed
// and s alone, so a resumed run reproduces an uninterrupted one bit for
// bit.
func Train(ctx context.Context, o Options) (*Result, error) {
	if o.Out == "" {
		return nil, errors.New("pretrain: no output file")
	}
	if o.Steps < 1 || o.Batch < 1 {
		return nil, fmt.Errorf("pretrain: steps %d and batch %d must be positive", o.Steps, o.Batch)
	}
	if err := o.Config.Validate(); err != nil {
		return nil, fmt.Errorf("pretrain: %w", err)
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	rec, recJSON, init, err := settings(o)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	corpus, err := buildLogged(ctx, o, logf)
	if err != nil {
		return nil, err
	}
	m, tr, err := newModel(o, init, rec.Init, logf)
	if err != nil {
		return nil, err
	}
	resumePath := o.Out + resumeSuffix
	start, ema, err := resumeAt(o.Resume, resumePath, m, tr, recJSON, corpus.Hash, logf)
	if err != nil {
		return nil, err
	}

	res := &Result{CorpusHash: corpus.Hash, Stats: corpus.Stats, Steps: start, Loss: ema}
	meta := func(step int, loss float64) map[string]string { return modelMeta(o, corpus.Hash, recJSON, step, loss) }
	save := func(step int, loss float64) error {
		if err := saveResume(resumePath, m, tr, string(recJSON), corpus.Hash, step, loss); err != nil {
			return err
		}
		return wrap(ckpt.SaveModel(o.Out, m, ckpt.BF16, meta(step, loss)))
	}

	order := newOrder(o.Seed, len(corpus.Seqs))
	tStart, tokens := time.Now(), 0
	ran := 0
	for step := start; step < o.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("pretrain: stopped at step %d: %w", step, err)
		}
		micro := make([][]model.Sequence, o.Batch)
		for i := range micro {
			s := corpus.Seqs[order.at(step*o.Batch+i)]
			micro[i] = []model.Sequence{s}
			tokens += len(s.Tokens)
		}
		st, err := tr.Step(micro)
		if err != nil {
			return res, fmt.Errorf("pretrain: step %d: %w", step+1, err)
		}
		if ema == 0 {
			ema = st.Loss
		}
		ema = 0.9*ema + 0.1*st.Loss
		res.Steps, res.Loss = step+1, ema
		ran++
		if (step+1)%10 == 0 || step+1 == o.Steps {
			el := time.Since(tStart).Seconds()
			logf("pretrain: step %d/%d loss %.4f (avg %.4f) lr %.2e grad %.2f, %.0f tokens/s, %s elapsed",
				step+1, o.Steps, st.Loss, ema, st.LR, st.GradNorm, float64(tokens)/el, time.Since(t0).Round(time.Second))
		}
		last := step+1 == o.Steps
		if o.ProbeEvery > 0 && ((step+1)%o.ProbeEvery == 0 || last) {
			pr, err := Probe(ctx, model.NewSampler(m, model.SamplerOptions{}), 16, 1)
			if err != nil {
				return res, err
			}
			logf("pretrain: probe at step %d: %s", step+1, pr)
		}
		stopping := o.StopAfter > 0 && ran >= o.StopAfter
		if last || stopping || (o.CheckpointEvery > 0 && (step+1)%o.CheckpointEvery == 0) {
			if err := save(step+1, ema); err != nil {
				return res, err
			}
		}
		if stopping && !last {
			logf("pretrain: stopping after %d steps of this run (step %d); --resume continues", ran, step+1)
			return res, nil
		}
	}
	res.Done = true
	if err := ckpt.SaveModel(o.Out, m, ckpt.BF16, meta(o.Steps, res.Loss)); err != nil {
		return res, fmt.Errorf("pretrain: %w", err)
	}
	logf("pretrain: wrote %s (%d steps, loss %.4f) in %s", o.Out, o.Steps, res.Loss, time.Since(t0).Round(time.Second))
	return res, nil
}

// modelMeta is the model file's metadata at step (loss: the running mean).
func modelMeta(o Options, corpusHash string, recJSON []byte, step int, loss float64) map[string]string {
	return map[string]string{ckpt.MetaSeed: strconv.FormatUint(o.Seed, 10), ckpt.MetaDataSeed: strconv.FormatUint(o.DataSeed, 10),
		ckpt.MetaSteps: strconv.Itoa(step), ckpt.MetaTarget: strconv.Itoa(o.Steps), ckpt.MetaCorpusHash: corpusHash,
		ckpt.MetaTrain: string(recJSON), ckpt.MetaTokenizer: "bytes", ckpt.MetaLoss: strconv.FormatFloat(loss, 'f', 4, 64)}
}

// wrap prefixes an error with the package name.
func wrap(err error) error {
	if err != nil {
		return fmt.Errorf("pretrain: %w", err)
	}
	return nil
}

// resumeAt loads the resume point when asked and there is one: the step
// to start at and the running loss (0, 0 otherwise).
func resumeAt(resume bool, path string, m *model.Model, tr *model.Trainer, recJSON []byte, corpusHash string, logf func(string, ...any)) (int, float64, error) {
	if !resume {
		return 0, 0, nil
	}
	s, l, err := loadResume(path, m, tr, string(recJSON), corpusHash)
	switch {
	case errors.Is(err, os.ErrNotExist):
		logf("pretrain: no resume point at %s; starting from scratch", path)
		return 0, 0, nil
	case err != nil:
		return 0, 0, err
	}
	logf("pretrain: resumed from %s at step %d", path, s)
	return s, l, nil
}

// settings is the run's record of its settings (stored in the model's
// metadata and checked on resume), as JSON, and the --init file if any.
func settings(o Options) (trainRecord, []byte, *ckpt.File, error) {
	rec := trainRecord{Preset: o.Preset, Config: o.Config, Seed: o.Seed, DataSeed: o.DataSeed, Steps: o.Steps, Batch: o.Batch,
		PeakLR: o.PeakLR, Warmup: o.Warmup, Mix: o.Corpus.Mix, Tasks: o.Corpus.TasksPerDomain, FloorLR: o.FloorLR}
	var init *ckpt.File
	if o.Init != "" {
		b, err := os.ReadFile(o.Init)
		if err != nil {
			return rec, nil, nil, fmt.Errorf("pretrain: init: %w", err)
		}
		if init, err = ckpt.Decode(b, o.Init); err != nil {
			return rec, nil, nil, fmt.Errorf("pretrain: init: %w", err)
		}
		sum := sha256.Sum256(b)
		rec.Init = hex.EncodeToString(sum[:])
	}
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return rec, nil, nil, fmt.Errorf("pretrain: encode settings: %w", err)
	}
	return rec, recJSON, init, nil
}

// buildLogged builds the corpus, checks its lengths and logs its sizes.
func buildLogged(ctx context.Context, o Options, logf func(string, ...any)) (*Corpus, error) {
	t0 := time.Now()
	copts := o.Corpus
	copts.Seed, copts.DataSeed = o.Seed, o.DataSeed
	corpus, err := BuildCorpus(ctx, copts)
	if err != nil {
		return nil, err
	}
	if len(corpus.Seqs) == 0 {
		return nil, errors.New("pretrain: the corpus is empty")
	}
	for _, s := range corpus.Seqs {
		if len(s.Tokens)-1 > o.Config.MaxPositionEmbeddings {
			return nil, fmt.Errorf("pretrain: a demonstration of %d tokens exceeds max_position_embeddings %d", len(s.Tokens), o.Config.MaxPositionEmbeddings)
		}
	}
	total := 0
	for _, st := range corpus.Stats {
		total += st.Tokens
	}
	logf("pretrain: corpus %s: %d sequences, %d tokens, built in %.1fs", corpus.Hash[:12], len(corpus.Seqs), total, time.Since(t0).Seconds())
	for _, name := range sortedNames(corpus.Stats) {
		st := corpus.Stats[name]
		logf("pretrain:   %-8s %d demos (%d variants, demo reward %.2f), %d sequences, %d tokens (%d completion), %d too long",
			name, st.Demos, st.Variants, st.Reward, st.Sequences, st.Tokens, st.Completion, st.Dropped)
	}
	return corpus, nil
}

// newModel is the model, from the seed or --init's weights (initHash its
// sha256), and its trainer under the cosine schedule.
func newModel(o Options, init *ckpt.File, initHash string, logf func(string, ...any)) (*model.Model, *model.Trainer, error) {
	m, err := model.New(o.Config, kernels.NewCPU(), o.Seed)
	if err != nil {
		return nil, nil, fmt.Errorf("pretrain: %w", err)
	}
	if init != nil {
		if err := fillParams(m, init); err != nil {
			return nil, nil, fmt.Errorf("pretrain: init: %w", err)
		}
		logf("pretrain: starting from the weights of %s (sha256 %s)", o.Init, initHash[:12])
	}
	tc := model.DefaultTrainConfig()
	floor := o.FloorLR
	if floor == 0 {
		floor = o.PeakLR / 20
	}
	tc.Schedule = model.CosineLR{Peak: o.PeakLR, Floor: floor, Warmup: o.Warmup, Total: o.Steps}
	// Pretraining does nothing but train: it keeps every layer's
	// activations (no recomputation; the results would be the same).
	tc.ActivationBytes = -1
	tr, err := model.NewTrainer(m, tc)
	if err != nil {
		return nil, nil, fmt.Errorf("pretrain: %w", err)
	}
	return m, tr, nil
}

// order is the sequence order: one seeded permutation per epoch, so the
// batch of any step is known without replaying earlier steps.
type order struct {
	seed  uint64
	n     int
	epoch int
	perm  []int
}

func newOrder(seed uint64, n int) *order { return &order{seed: seed, n: n, epoch: -1} }

func (o *order) at(i int) int {
	e := i / o.n
	if e != o.epoch {
		r := rand.New(rand.NewPCG(o.seed, 0xe90c+uint64(e)))
		o.perm = r.Perm(o.n)
		o.epoch = e
	}
	return o.perm[i%o.n]
}

// Resume point metadata keys and tensor names.
const (
	resumeStep   = "step"
	resumeRecord = "record"
	resumeCorpus = "corpus_hash"
	resumeLoss   = "loss_ema"
	resumeAdamM  = "optimizer.m"
	resumeAdamV  = "optimizer.v"
)

// saveResume writes weights (float32, exact), AdamW moments and the step
// atomically: a crash leaves the previous resume point intact.
func saveResume(path string, m *model.Model, tr *model.Trainer, record, corpusHash string, step int, loss float64) error {
	ts, err := ckpt.Tensors(m, ckpt.F32)
	if err != nil {
		return fmt.Errorf("pretrain: resume point: %w", err)
	}
	st := tr.State()
	if st.Step != step {
		panic(fmt.Sprintf("pretrain: optimizer at step %d, loop at %d", st.Step, step))
	}
	ts = append(ts, ckpt.Tensor{Name: resumeAdamM, Shape: []int{len(st.M)}, DType: ckpt.F32, Data: st.M},
		ckpt.Tensor{Name: resumeAdamV, Shape: []int{len(st.V)}, DType: ckpt.F32, Data: st.V})
	meta := map[string]string{resumeStep: strconv.Itoa(step), resumeRecord: record, resumeCorpus: corpusHash,
		resumeLoss: strconv.FormatFloat(loss, 'g', -1, 64)}
	if err := ckpt.WriteFile(path, ts, meta); err != nil {
		return fmt.Errorf("pretrain: resume point: %w", err)
	}
	return nil
}

// loadResume restores a resume point written with the same settings and
// corpus; anything else is refused with the field that differs.
func loadResume(path string, m *model.Model, tr *model.Trainer, record, corpusHash string) (int, float64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, 0, err
	}
	f, err := ckpt.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("pretrain: resume: %w", err)
	}
	if got := f.Meta[resumeRecord]; got != record {
		return 0, 0, fmt.Errorf("pretrain: resume: %s was written with other settings (%s), not %s; remove it or run without --resume", path, got, record)
	}
	if got := f.Meta[resumeCorpus]; got != corpusHash {
		return 0, 0, fmt.Errorf("pretrain: resume: %s: corpus hash %s differs from this build's %s", path, got, corpusHash)
	}
	step, err := strconv.Atoi(f.Meta[resumeStep])
	if err != nil || step < 0 {
		return 0, 0, fmt.Errorf("pretrain: resume: %s: metadata %q = %q is not a step count", path, resumeStep, f.Meta[resumeStep])
	}
	if err := fillParams(m, f); err != nil {
		return 0, 0, fmt.Errorf("pretrain: resume: %w", err)
	}
	n := len(m.ParamValues())
	mo, err := f.Float32(resumeAdamM, []int{n})
	if err != nil {
		return 0, 0, fmt.Errorf("pretrain: resume: %w", err)
	}
	ve, err := f.Float32(resumeAdamV, []int{n})
	if err != nil {
		return 0, 0, fmt.Errorf("pretrain: resume: %w", err)
	}
	if err := tr.SetState(model.OptimizerState{Step: step, M: mo, V: ve}); err != nil {
		return 0, 0, fmt.Errorf("pretrain: resume: %s: %w", path, err)
	}
	loss, err := strconv.ParseFloat(f.Meta[resumeLoss], 64)
	if err != nil {
		return 0, 0, fmt.Errorf("pretrain: resume: %s: metadata %q = %q is not a number", path, resumeLoss, f.Meta[resumeLoss])
	}
	return step, loss, nil
}

// fillParams sets every parameter of m from the tensor of the same name.
func fillParams(m *model.Model, f *ckpt.File) error {
	for _, p := range m.Params() {
		v, err := f.Float32(p.Name, p.Shape)
		if err != nil {
			return err
		}
		if err := m.WriteParam(p.Name, v); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}

func sortedNames(m map[string]DomainStats) []string { return slices.Sorted(maps.Keys(m)) }
