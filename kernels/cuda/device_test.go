//go:build cuda

package cuda_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"whale/core/model"
	"whale/kernels"
	"whale/kernels/cuda"
	"whale/kernels/kerneltest"
)

// The device check: the op table every backend runs (kernels/kerneltest)
// on the CUDA backend against the float64 reference, each output within
// its op's tolerance (normalised error max|gpu−ref| over max|ref|), exact
// ones bit for bit; then properties of the GPU alone (the sampler's
// invariants) and training curves against the CPU's. These tests need an
// NVIDIA GPU; elsewhere they skip (and fail under WHALE_REQUIRE_GPU, which
// device-check.sh sets, so that a check on a machine whose driver did not
// load cannot pass by skipping).

var dev struct {
	once sync.Once
	be   *cuda.Backend
	err  error
}

// device returns the process's CUDA backend, opened once and never closed
// (the benchmarks share it), or skips tb when there is no GPU.
func device(tb testing.TB) *cuda.Backend {
	tb.Helper()
	dev.once.Do(func() { dev.be, dev.err = cuda.New() })
	if dev.err != nil {
		if os.Getenv("WHALE_REQUIRE_GPU") != "" {
			tb.Fatalf("no CUDA device although WHALE_REQUIRE_GPU is set: %v", dev.err)
		}
		tb.Skipf("no CUDA device (cuda.New: %v): this check runs on a machine with an NVIDIA GPU, see kernels/cuda/device-check.sh", dev.err)
	}
	return dev.be
}

// kindInvariant is the report's kind of a GPU-only property, judged bit
// for bit (the table's cases are "exact", "f32" or "bf16").
const kindInvariant = "invariant"

// report gathers every case of the device tests; each test rewrites the
// file named by WHALE_CHECK_JSON when it ends.
var report struct {
	sync.Mutex
	Backend string
	Device  string
	Cases   []kerneltest.Result
}

func record(r kerneltest.Result) {
	report.Lock()
	defer report.Unlock()
	report.Cases = append(report.Cases, r)
}

func saveReport(t *testing.T, be *cuda.Backend) {
	path := os.Getenv("WHALE_CHECK_JSON")
	if path == "" {
		return
	}
	report.Lock()
	defer report.Unlock()
	report.Backend, report.Device = be.Name(), be.DeviceName()
	pass := true
	for _, c := range report.Cases {
		pass = pass && c.Pass
	}
	data, err := json.MarshalIndent(struct {
		Backend   string              `json:"backend"`
		Device    string              `json:"device"`
		Reference string              `json:"reference"`
		Pass      bool                `json:"pass"`
		Cases     []kerneltest.Result `json:"cases"`
	}{report.Backend, report.Device, kerneltest.Reference().Name(), pass, report.Cases}, "", " ")
	if err == nil {
		err = os.WriteFile(path, append(data, '\n'), 0o644)
	}
	if err != nil {
		t.Errorf("write %s: %v", path, err)
	}
}

// deviceCases is the op table plus, for the head sizes they serve (32 and
// 128), the training attention cases again on the thread-per-row kernels
// (WHALE_CUDA_ATTN_FWD/BWD=thread), which must stay as strict as the
// default ones.
func deviceCases() []kerneltest.Case {
	cs := kerneltest.Cases()
	for _, a := range kerneltest.TrainingAttention {
		if a.HD != 32 && a.HD != 128 {
			continue
		}
		for _, c := range kerneltest.AttentionCases(a) {
			run := c.Run
			c.Name = "AttentionThreadKernels/" + c.Name
			c.Run = func(e *kerneltest.Env) {
				if g, ok := e.Be.(*cuda.Backend); ok {
					g.SetThreadAttention(true, true)
					defer g.SetThreadAttention(false, false)
				}
				run(e)
			}
			cs = append(cs, c)
		}
	}
	return cs
}

// TestDeviceOpsMatchReference runs every case of the op table on the GPU
// against the float64 reference (computed ahead on every core), first
// with views aligned to 256 bytes, then again at an odd element offset
// (as the model's small parameters sit in its arena); the odd pass comes
// last so that a misaligned access, which spoils the CUDA context, cannot
// hide the results of the aligned one.
func TestDeviceOpsMatchReference(t *testing.T) {
	gpu := device(t)
	t.Logf("device %s, backend %s, reference %s", gpu.DeviceName(), gpu.Name(), kerneltest.Reference().Name())
	defer saveReport(t, gpu)
	cs := deviceCases()
	for _, pad := range kerneltest.Pads {
		err := kerneltest.CheckAll(gpu, cs, pad, runtime.NumCPU(), func(c kerneltest.Case, r kerneltest.Result) {
			if pad != kerneltest.Pads[0] {
				r.Name = fmt.Sprintf("offset%d/%s", pad, r.Name)
			}
			t.Run(r.Name, func(t *testing.T) {
				record(r)
				for _, f := range r.Failures() {
					t.Error(f)
				}
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// samplerRowChunk is core/model's rowChunk: on a backend that does not
// pack weights (kernels.PackedNT) the sampler runs prompt products in
// blocks of at most this many rows and relies on every row of a block
// getting the bits it gets alone, so that a prompt's keys and values are
// the same whether or not part of it came from the prefix cache.
const samplerRowChunk = 16

// TestDeviceSamplerInvariants checks, on the GPU alone, the properties the
// sampler builds on (core/model's batch-independent sampling and exact
// prefix reuse): AttentionKV's result for a row is bit-identical whether
// its positions are split across a prefix cache or not, whether its span
// runs alone or with others, and whether the row runs alone; Gemm NT and
// GemmBF16NT give a row the same bits alone and in a block of up to
// samplerRowChunk rows.
func TestDeviceSamplerInvariants(t *testing.T) {
	gpu := device(t)
	defer saveReport(t, gpu)
	inv := func(name string, f func(e *kerneltest.Env) (a, b []float32)) {
		t.Run(name, func(t *testing.T) {
			r := kerneltest.Result{Name: "invariant/" + name, Kind: kindInvariant, Deterministic: true}
			func() {
				defer func() {
					if p := recover(); p != nil {
						r.Error = fmt.Sprintf("panic: %v", p)
					}
				}()
				e := kerneltest.NewEnv(gpu, kerneltest.Pads[0])
				a, b := f(e)
				e.Finish()
				r.Err = kerneltest.Num(kerneltest.NormErr(widen(a), widen(b)))
				r.Pass = kerneltest.SameBits(widen(a), widen(b))
			}()
			if r.Error != "" {
				r.Err = kerneltest.Num(math.Inf(1))
				t.Errorf("GPU: %s", r.Error)
			} else if !r.Pass {
				t.Errorf("not bit-identical: normalised difference %.3g", float64(r.Err))
			}
			record(r)
		})
	}
	store := func(e *kerneltest.Env, t kernels.Tensor) []float32 {
		h := make([]float32, t.Len())
		e.Be.Store(h, t)
		return h
	}
	for _, s := range []kerneltest.AttnShape{{H: 8, KVH: 2, HD: 32}, {H: 16, KVH: 8, HD: 128}} {
		name := s.String()
		inv("AttentionKV/split-vs-whole/"+name, func(e *kerneltest.Env) (a, b []float32) {
			whole := kerneltest.NewKVCall(e, s, kerneltest.KVSpecs, false)
			e.Rng = rand.New(rand.NewPCG(1, 2))
			split := kerneltest.NewKVCall(e, s, kerneltest.KVSpecs, true)
			return store(e, whole.Attend(e)), store(e, split.Attend(e))
		})
		inv("AttentionKV/span-alone-vs-batched/"+name, func(e *kerneltest.Env) (a, b []float32) {
			c := kerneltest.NewKVCall(e, s, kerneltest.KVSpecs, true)
			all := store(e, c.Attend(e))
			var alone []float32
			W := s.H * s.HD
			for _, sp := range c.Spans {
				one := sp
				one.QRow = 0
				q := c.Q.View(sp.QRow*W, sp.Rows*W)
				out := e.In(sp.Rows * W)
				e.Be.AttentionKV(out, q, []kernels.KVSpan{one}, s.H, s.KVH, s.HD)
				alone = append(alone, store(e, out)...)
			}
			return all, alone
		})
		inv("AttentionKV/row-alone-vs-prefill/"+name, func(e *kerneltest.Env) (a, b []float32) {
			c := kerneltest.NewKVCall(e, s, []kerneltest.KVSpec{{Pos0: 100, Rows: 60}}, false)
			all := store(e, c.Attend(e))
			W := s.H * s.HD
			var rows, alone []float32
			for r := 0; r < 60; r += 13 {
				one := c.Spans[0]
				one.QRow, one.Rows, one.Pos0 = 0, 1, 100+r
				out := e.In(W)
				e.Be.AttentionKV(out, c.Q.View(r*W, W), []kernels.KVSpan{one}, s.H, s.KVH, s.HD)
				alone = append(alone, store(e, out)...)
				rows = append(rows, all[r*W:(r+1)*W]...)
			}
			return rows, alone
		})
	}
	R := samplerRowChunk
	for _, kn := range [][2]int{{256, 704}, {1024, 3072}} {
		k, n := kn[0], kn[1]
		for _, bf := range []bool{false, true} {
			op := "GemmNT"
			if bf {
				op = "GemmBF16NT"
			}
			inv(fmt.Sprintf("%s/rows-alone-vs-%d/k%dn%d", op, R, k, n), func(e *kerneltest.Env) (a, b []float32) {
				x := e.In(R * k)
				var w kernels.Tensor
				if bf {
					w = e.BF16(k * n)
					e.Be.ToBF16(w, e.In(k*n))
				} else {
					w = e.In(k * n)
				}
				gemm := func(out, x kernels.Tensor, m int) {
					if bf {
						e.Be.GemmBF16NT(out, x, w, m, k, n, false)
					} else {
						e.Be.Gemm(kernels.NT, out, x, w, m, k, n, false)
					}
				}
				block := e.Zeros(R * n)
				gemm(block, x, R)
				var alone []float32
				for r := range R {
					out := e.Zeros(n)
					gemm(out, x.View(r*k, k), 1)
					alone = append(alone, store(e, out)...)
				}
				return store(e, block), alone
			})
		}
	}

	// Uploads are staged in page-locked chunks of 1 MiB reused after each
	// synchronisation (staging.go): 1500 uploads between two
	// synchronisations fill and leave several chunks, and one larger than
	// a chunk gets its own. Every one must reach its op intact.
	inv("uploads/many-between-syncs", func(e *kerneltest.Env) (a, b []float32) {
		const V, C, calls, rows, big = 1000, 8, 1500, 200, 300_000
		th := e.Normals(V*C, 1)
		table := e.Load(th)
		toks := e.Ints(calls*rows+big, V)
		out := e.Zeros((calls*rows + big) * C)
		for i := range calls {
			e.Be.Embedding(out.View(i*rows*C, rows*C), table, toks[i*rows:(i+1)*rows], C)
		}
		e.Be.Embedding(out.View(calls*rows*C, big*C), table, toks[calls*rows:], C)
		want := make([]float32, 0, out.Len())
		for _, t := range toks {
			want = append(want, th[int(t)*C:int(t+1)*C]...)
		}
		return store(e, out), want
	})
	// Queued cache writes (cachebatch.go) against the layout the backend
	// documents, [KVH][cap][hd], applied on the host in call order:
	// one-row writes into 40 caches that share one allocation (as a
	// sequence's layers share theirs), a position written twice in a row
	// (the second must win), and a write whose source is a cache that a
	// queued write fills (it must read the new values).
	inv("CacheWrite/queued-vs-host", func(e *kerneltest.Env) (a, b []float32) {
		const KVH, hd, cp, nc, steps = 2, 32, 16, 40, 6
		w, size := KVH*hd, KVH*cp*hd
		arena := e.Zeros(nc * size)
		srcH := e.Normals((steps*nc+4)*w, 1)
		src := e.Load(srcH)
		host := make([]float32, nc*size)
		write := func(c int, from kernels.Tensor, hs []float32, pos, rows int) {
			e.Be.CacheWrite(arena.View(c*size, size), from, kernels.Keys, pos, rows, KVH, hd, cp)
			for r := range rows {
				for kh := range KVH {
					for d := range hd {
						host[c*size+(kh*cp+pos+r)*hd+d] = hs[r*w+kh*hd+d]
					}
				}
			}
		}
		for st := range steps {
			for c := range nc {
				o := (st*nc + c) * w
				write(c, src.View(o, w), srcH[o:o+w], st, 1)
			}
		}
		o := steps * nc * w
		write(0, src.View(o, 2*w), srcH[o:o+2*w], 3, 2)
		write(0, src.View(o+2*w, 2*w), srcH[o+2*w:o+4*w], 3, 2)
		// Cache 0's head 0 at positions 3 and 4, which the queued second
		// write fills.
		write(1, arena.View(3*hd, w), slices.Clone(host[3*hd:3*hd+w]), 15, 1)
		return store(e, arena), host
	})
	// CacheWrites (cachewrites.go) against the same host layout, job by
	// job in order: one-row jobs into 40 caches of one allocation, a
	// position written by two jobs of one call (the later wins), a job
	// reading a cache an earlier job of the call fills, a job too large
	// for the queue between small ones, and an empty job.
	inv("CacheWrites/batched-vs-host", func(e *kerneltest.Env) (a, b []float32) {
		const KVH, hd, cp, nc = 2, 32, 80, 40
		w, size := KVH*hd, KVH*cp*hd
		arena := e.Zeros(nc * size)
		srcH := e.Normals((nc+4+70)*w, 1)
		src := e.Load(srcH)
		host := make([]float32, nc*size)
		var jobs []kernels.CacheWriteJob
		write := func(c int, from kernels.Tensor, hs []float32, pos, rows int) {
			jobs = append(jobs, kernels.CacheWriteJob{Cache: arena.View(c*size, size), Src: from, Kind: kernels.Values, Pos0: pos, Rows: rows, Cap: cp})
			for r := range rows {
				for kh := range KVH {
					for d := range hd {
						host[c*size+(kh*cp+pos+r)*hd+d] = hs[r*w+kh*hd+d]
					}
				}
			}
		}
		for c := range nc {
			write(c, src.View(c*w, w), srcH[c*w:(c+1)*w], c%7, 1)
		}
		o := nc * w
		write(0, src.View(o, 2*w), srcH[o:o+2*w], 3, 2)
		write(0, src.View(o+2*w, 2*w), srcH[o+2*w:o+4*w], 3, 2)
		write(1, arena.View(3*hd, w), slices.Clone(host[3*hd:3*hd+w]), 15, 1)
		o += 4 * w
		write(2, src.View(o, 70*w), srcH[o:o+70*w], 9, 70) // 70·64 elements: more than the queue takes
		write(3, src.View(0, 0), nil, 5, 0)
		write(4, src.View(0, w), srcH[:w], 79, 1)
		gpu.CacheWrites(jobs, KVH, hd)
		return store(e, arena), host
	})
	// The profile (profile.go) counts every op once, GEMMs by layout and
	// shape, and times each on the GPU and the host.
	inv("profile/counts", func(e *kerneltest.Env) (a, b []float32) {
		x, y, out := e.In(64*32), e.In(32*16), e.Zeros(64*16)
		was := gpu.Profiling()
		if err := gpu.EnableProfile(true); err != nil {
			panic(err)
		}
		defer gpu.EnableProfile(was)
		if err := gpu.ProfileReset(); err != nil {
			panic(err)
		}
		for range 3 {
			e.Be.Gemm(kernels.NN, out, x, y, 64, 32, 16, false)
		}
		for range 2 {
			e.Be.Add(out, out, out)
		}
		rows, err := gpu.Profile()
		if err != nil {
			panic(err)
		}
		got := map[string]cuda.ProfileRow{}
		for _, r := range rows {
			got[r.Op] = r
		}
		timed := func(r cuda.ProfileRow) float32 {
			if r.GPU > 0 && r.Host > 0 {
				return 1
			}
			return 0
		}
		g, ad := got["Gemm NN 64x32x16"], got["Add"]
		return []float32{float32(g.Count), float32(ad.Count), timed(g), timed(ad), float32(len(rows))},
			[]float32{3, 2, 1, 1, 3} // and the row of the host's waits
	})
}

// trainTol bounds |loss_gpu − loss_cpu| at every step of the training
// check. Each op agrees with the CPU to ~1e-6 relative, but the GPU
// reassociates its float32 sums, and 200 AdamW steps carry those
// last-bit differences forward into the weights, so the curves drift
// apart slowly. Measured on the CPU at these settings: the same run with
// each step's two micro-batches merged into one (a rounding-level change)
// stays within 3e-7 of the loss, the float64 backend within 1e-5.
// A wrong kernel is off by 1e-1 within a few steps. bench-small trains at
// lr 3e-4, not 1e-3: there its curve is chaotic (the merged run drifts by
// 5e-4 and float64 by 2e-2), which would fail a correct backend.
const trainTol = 1e-3

// trainRun is one training comparison.
type trainRun struct {
	Preset string  `json:"preset"`
	B      int     `json:"B"` // sequences a step, in two micro-batches
	T      int     `json:"T"` // longest sequence's predictions
	Steps  int     `json:"steps"`
	LR     float64 `json:"lr"`
	Tol    float64 `json:"tol"`
	// ActivationBytes is TrainConfig.ActivationBytes (small: layers'
	// activations are recomputed in the backward pass).
	ActivationBytes int64 `json:"activation_bytes,omitempty"`
	// CPU and GPU are the loss curves, MaxAbsDiff the largest gap.
	CPU        []float64      `json:"cpu_loss"`
	GPU        []float64      `json:"gpu_loss"`
	MaxAbsDiff kerneltest.Num `json:"max_abs_diff"`
	WorstStep  int            `json:"worst_step"`
	Pass       bool           `json:"pass"`
	Error      string         `json:"error,omitempty"`
}

// TestDeviceTrainingMatchesCPU trains the same model from the same seed on
// the same batches for 200 steps on the CPU and on the GPU: bench-small
// (the engine bench's model: GQA, qk-norm, tied head) and tiny (q/k/v
// biases, an untied head, head size 6; its activations recomputed in the
// backward pass). The batches have right-padding,
// masked prompts and two micro-batches a step, so packing, accumulation
// and weight-0 rows all take part. With WHALE_CHECK_JSON_TRAIN set, both
// curves go there.
func TestDeviceTrainingMatchesCPU(t *testing.T) {
	gpu := device(t)
	runs := []trainRun{
		{Preset: "bench-small", B: 4, T: 64, Steps: 200, LR: 3e-4, Tol: trainTol},
		{Preset: "tiny", B: 6, T: 24, Steps: 200, LR: 1e-3, Tol: trainTol, ActivationBytes: 1},
	}
	for i := range runs {
		r := &runs[i]
		t.Run(r.Preset, func(t *testing.T) {
			var err error
			if r.CPU, err = trainCurve(kernels.NewCPU(), *r); err != nil {
				t.Fatalf("CPU: %v", err)
			}
			if r.GPU, err = trainCurve(gpu, *r); err != nil {
				r.Error = err.Error()
				t.Fatalf("GPU: %v", err)
			}
			var worst float64
			for s := range r.CPU {
				d := math.Abs(r.GPU[s] - r.CPU[s])
				if d > worst || math.IsNaN(d) {
					worst, r.WorstStep = d, s+1
				}
			}
			r.MaxAbsDiff, r.Pass = kerneltest.Num(worst), worst <= r.Tol
			t.Logf("loss %.4f → %.4f (CPU) %.4f → %.4f (GPU); max |Δ| %.2g at step %d",
				r.CPU[0], r.CPU[len(r.CPU)-1], r.GPU[0], r.GPU[len(r.GPU)-1], worst, r.WorstStep)
			if !r.Pass {
				t.Errorf("loss curves differ by %.3g at step %d (tol %.0g): CPU %.6f, GPU %.6f",
					worst, r.WorstStep, r.Tol, r.CPU[r.WorstStep-1], r.GPU[r.WorstStep-1])
			}
		})
	}
	if path := os.Getenv("WHALE_CHECK_JSON_TRAIN"); path != "" {
		pass := true
		for _, r := range runs {
			pass = pass && r.Pass
		}
		data, err := json.MarshalIndent(struct {
			Device string     `json:"device"`
			Pass   bool       `json:"pass"`
			Runs   []trainRun `json:"runs"`
		}{gpu.DeviceName(), pass, runs}, "", " ")
		if err == nil {
			err = os.WriteFile(path, append(data, '\n'), 0o644)
		}
		if err != nil {
			t.Errorf("write %s: %v", path, err)
		}
	}
}

// trainCurve trains a model of r's preset on be and returns the loss of
// every step; a panic inside the backend becomes the error.
func trainCurve(be kernels.Backend, r trainRun) (losses []float64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("after %d steps: panic: %v", len(losses), p)
		}
	}()
	cfg, err := model.Preset(r.Preset)
	if err != nil {
		return nil, err
	}
	m, err := model.New(cfg, be, 7)
	if err != nil {
		return nil, err
	}
	tc := model.DefaultTrainConfig()
	tc.Schedule = model.ConstantLR(r.LR)
	tc.ActivationBytes = r.ActivationBytes
	tr, err := model.NewTrainer(m, tc)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(11, 13))
	for s := range r.Steps {
		st, err := tr.Step(trainBatch(rng, cfg.VocabSize, r.B, r.T))
		if err != nil {
			return losses, fmt.Errorf("step %d: %w", s+1, err)
		}
		losses = append(losses, st.Loss)
	}
	return losses, nil
}

// trainBatch is B sequences in two micro-batches, learnable: each runs an
// arithmetic progression mod V from a random start with a random stride,
// so the model can lower its loss by reading the stride from the context.
// The first micro-batch's longest sequence has T+1 tokens, the second's
// fewer (another padded length); every sequence masks its first 3 tokens
// (a prompt), and lengths vary within a micro-batch (right-padding).
func trainBatch(rng *rand.Rand, V, B, T int) [][]model.Sequence {
	half := B / 2
	micro := [][]model.Sequence{make([]model.Sequence, 0, half), make([]model.Sequence, 0, B-half)}
	for i := range B {
		mb, longest := 0, T+1
		if i >= half {
			mb, longest = 1, T*3/4+1
		}
		n := longest
		if i%2 == 1 {
			n = max(5, longest-1-rng.IntN(longest/2))
		}
		start, stride := rng.IntN(V), 1+rng.IntN(min(V-1, 7))
		s := model.Sequence{Tokens: make([]int32, n), Mask: make([]float32, n)}
		for j := range s.Tokens {
			s.Tokens[j] = int32((start + j*stride) % V)
			if j >= 3 {
				s.Mask[j] = 1
			}
		}
		micro[mb] = append(micro[mb], s)
	}
	return micro
}

func widen(h []float32) []float64 {
	r := make([]float64, len(h))
	for i, v := range h {
		r[i] = float64(v)
	}
	return r
}
