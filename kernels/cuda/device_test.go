//go:build cuda

package cuda_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"

	"whale/core/model"
	"whale/kernels"
	"whale/kernels/cuda"
)

// The device check: every op of kernels.Backend runs on the CUDA backend
// and on the float32 CPU backend from identical seeded inputs, and the
// outputs must agree within a stated normalised error (max|gpu−cpu| over
// max|cpu|). These tests need an NVIDIA GPU; elsewhere they skip (and fail
// under WHALE_REQUIRE_GPU, which device-check.sh sets, so that a check on
// a machine whose driver did not load cannot pass by skipping).

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

// Tolerances on the normalised error max|gpu−cpu| / max|cpu| of an output.
const (
	// tolF32: float32 rounds at 6e-8 relative; the GPU orders its sums
	// differently (GEMM tiles, tree reductions), which over the longest
	// sums here (a few thousand terms) moves results by ~1e-6 of the
	// output's scale. A wrong index or a missed term is of order 1.
	tolF32 = 1e-5
	// tolBF16: GemmBF16NT's b holds bf16 weights; a GPU may round the
	// float operand a to bf16 as well before the tensor-core product
	// (2⁻⁹ relative a term), which stays within 1e-2 of the scale.
	tolBF16 = 1e-2
	// tiny keeps the normalisation finite where the CPU's output is all
	// zeros: any nonzero GPU value then fails.
	tiny = 1e-30
)

// Kinds of case: the tolerance class of its outputs.
const (
	kindF32       = "f32"       // tolF32
	kindBF16      = "bf16"      // tolBF16
	kindExact     = "exact"     // bit-identical to the CPU (NaN equal to NaN)
	kindInvariant = "invariant" // a GPU-only property, bit-identical
)

func tolOf(kind string) float64 {
	switch kind {
	case kindF32:
		return tolF32
	case kindBF16:
		return tolBF16
	}
	return 0
}

// guard fills the elements around every input view, so that an op writing
// outside its view, or reading outside it into a sum, shows.
const guard = -3.75

// opEnv hands an op case its tensors. Every tensor is a view of pad
// elements into an allocation of its own, with guard values on both sides;
// the values come from a seeded stream, so every backend sees identical
// inputs when the case asks for them in the same order.
type opEnv struct {
	be   kernels.Backend
	rng  *rand.Rand
	pad  int
	bufs []guarded
	outs []output
}

type guarded struct {
	parent kernels.Tensor
	n      int  // elements of the view (which starts at pad)
	bf16   bool // guards are zero and read back through GemmBF16NT
}

// output is one result of a case, in float64.
type output struct {
	name  string
	exact bool // bit-identical whatever the case's kind
	vals  []float64
}

func newEnv(be kernels.Backend, pad int) *opEnv {
	return &opEnv{be: be, rng: rand.New(rand.NewPCG(1, 2)), pad: pad}
}

// load returns a view holding h.
func (e *opEnv) load(h []float32) kernels.Tensor {
	full := make([]float32, len(h)+2*e.pad)
	for i := range full {
		full[i] = guard
	}
	copy(full[e.pad:], h)
	p := e.be.Alloc(len(full))
	e.be.Load(p, full)
	e.bufs = append(e.bufs, guarded{parent: p, n: len(h)})
	return p.View(e.pad, len(h))
}

// in returns n standard normal values.
func (e *opEnv) in(n int) kernels.Tensor { return e.load(e.normals(n, 1)) }

// zeros returns n zeros, as Alloc does.
func (e *opEnv) zeros(n int) kernels.Tensor { return e.load(make([]float32, n)) }

// pos returns n values in [0.5, 1.5) (second moments, inverse RMS).
func (e *opEnv) pos(n int) kernels.Tensor {
	h := make([]float32, n)
	for i := range h {
		h[i] = 0.5 + e.rng.Float32()
	}
	return e.load(h)
}

func (e *opEnv) normals(n int, scale float64) []float32 {
	h := make([]float32, n)
	for i := range h {
		h[i] = float32(scale * e.rng.NormFloat64())
	}
	return h
}

func (e *opEnv) ints(n, hi int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(e.rng.IntN(hi))
	}
	return r
}

// bf16 returns a zeroed bfloat16 view of n elements.
func (e *opEnv) bf16(n int) kernels.Tensor {
	p := e.be.AllocBF16(n + 2*e.pad)
	e.bufs = append(e.bufs, guarded{parent: p, n: n, bf16: true})
	return p.View(e.pad, n)
}

// out records tensor t (read with Store) as output name.
func (e *opEnv) out(name string, t kernels.Tensor) {
	h := make([]float32, t.Len())
	e.be.Store(h, t)
	e.outs = append(e.outs, output{name: name, vals: widen(h)})
}

// out64 records t read with Store64.
func (e *opEnv) out64(name string, t kernels.Tensor) {
	h := make([]float64, t.Len())
	e.be.Store64(h, t)
	e.outs = append(e.outs, output{name: name, vals: h})
}

// outBF16 records a bfloat16 tensor, widened exactly; always bit-exact.
func (e *opEnv) outBF16(name string, t kernels.Tensor) {
	e.outs = append(e.outs, output{name: name, exact: true, vals: widen(readBF16(e.be, t))})
}

// val records host values an op returned (SumSq, AllFinite).
func (e *opEnv) val(name string, exact bool, v ...float64) {
	e.outs = append(e.outs, output{name: name, exact: exact, vals: v})
}

// readBF16 widens a bfloat16 tensor through the one product that is exact
// on any backend: GemmBF16NT with m = k = 1 and a = [1] gives out[j] =
// 1·b[j], the bf16 value widened, NaN and Inf included.
func readBF16(be kernels.Backend, t kernels.Tensor) []float32 {
	one, out := be.Alloc(1), be.Alloc(t.Len())
	defer func() { be.Free(one); be.Free(out) }()
	be.Load(one, []float32{1})
	be.GemmBF16NT(out, one, t, 1, 1, t.Len(), false)
	h := make([]float32, t.Len())
	be.Store(h, out)
	return h
}

// finish records the guard elements of every allocation as one exact
// output and frees the allocations.
func (e *opEnv) finish() {
	var g []float64
	for _, b := range e.bufs {
		var h []float32
		if b.bf16 {
			h = readBF16(e.be, b.parent)
		} else {
			h = make([]float32, b.parent.Len())
			e.be.Store(h, b.parent)
		}
		g = append(g, widen(h[:e.pad])...)
		g = append(g, widen(h[e.pad+b.n:])...)
		e.be.Free(b.parent)
	}
	e.bufs = nil
	e.outs = append(e.outs, output{name: "guards", exact: true, vals: g})
}

func widen(h []float32) []float64 {
	r := make([]float64, len(h))
	for i, v := range h {
		r[i] = float64(v)
	}
	return r
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// opCase is one op (or a short chain of ops) on seeded inputs.
type opCase struct {
	name string
	kind string
	pad  int // guard elements around every view (64 keeps 256-byte alignment)
	run  func(e *opEnv)
}

// runCase runs c on be and returns its outputs; a panic (an unsupported
// shape, a CUDA error) or a failed Sync becomes err.
func runCase(be kernels.Backend, c opCase) (outs []output, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	e := newEnv(be, c.pad)
	c.run(e)
	e.finish()
	if err := kernels.Sync(be); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	return e.outs, nil
}

// normErr is max|got−want| / max(max|want|, tiny); a NaN anywhere in got
// where want has none makes it NaN (Go's max propagates NaN).
func normErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, m float64
	for i, w := range want {
		g := got[i]
		if math.IsNaN(w) && math.IsNaN(g) || math.IsInf(w, 0) && g == w {
			continue
		}
		d = max(d, math.Abs(g-w))
		m = max(m, math.Abs(w))
	}
	return d / max(m, tiny)
}

// sameBits reports whether a and b are bit-identical, any NaN equal to
// any NaN (payloads are not part of the contract).
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) && math.IsNaN(b[i]) {
			continue
		}
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// num is a float that JSON can hold even when it is NaN or Inf (as the
// strings "NaN", "+Inf", "-Inf").
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(f)
}

// worse reports whether error a is worse than b, NaN worst of all.
func worse(a, b num) bool {
	if math.IsNaN(float64(b)) {
		return false
	}
	return math.IsNaN(float64(a)) || a > b
}

// caseResult is one case's line in the report.
type caseResult struct {
	Name    string      `json:"name"`
	Kind    string      `json:"kind"`
	Tol     float64     `json:"tol"`
	Err     num         `json:"err"`
	Worst   string      `json:"worst_output,omitempty"`
	Outputs []outResult `json:"outputs,omitempty"`
	// Deterministic: the case run twice on the GPU gave bit-identical
	// outputs.
	Deterministic bool   `json:"deterministic"`
	Pass          bool   `json:"pass"`
	Error         string `json:"error,omitempty"`
}

type outResult struct {
	Name  string `json:"name"`
	Err   num    `json:"err"`
	Exact bool   `json:"exact,omitempty"` // judged bit-exact
	Match bool   `json:"match"`
}

// report gathers every case of the device tests; each test rewrites the
// file named by WHALE_CHECK_JSON when it ends.
var report struct {
	sync.Mutex
	Backend string       `json:"backend"`
	Device  string       `json:"device"`
	Cases   []caseResult `json:"cases"`
}

func record(r caseResult) {
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
		Backend string       `json:"backend"`
		Device  string       `json:"device"`
		Pass    bool         `json:"pass"`
		Cases   []caseResult `json:"cases"`
	}{report.Backend, report.Device, pass, report.Cases}, "", " ")
	if err == nil {
		err = os.WriteFile(path, append(data, '\n'), 0o644)
	}
	if err != nil {
		t.Errorf("write %s: %v", path, err)
	}
}

// check runs c on the CPU and twice on the GPU and judges it.
func check(t *testing.T, gpu kernels.Backend, c opCase) caseResult {
	r := caseResult{Name: c.name, Kind: c.kind, Tol: tolOf(c.kind)}
	want, err := runCase(kernels.NewCPU(), c)
	if err != nil {
		t.Fatalf("%s on the CPU (a bug in the case): %v", c.name, err)
	}
	got, err := runCase(gpu, c)
	var again []output
	if err == nil {
		again, err = runCase(gpu, c)
	}
	if err != nil {
		r.Err, r.Error = num(math.Inf(1)), err.Error()
		return r
	}
	r.Pass, r.Deterministic = true, true
	for i, w := range want {
		g := got[i]
		o := outResult{Name: w.name, Err: num(normErr(g.vals, w.vals)), Exact: w.exact || c.kind == kindExact}
		if o.Exact {
			o.Match = sameBits(g.vals, w.vals)
		} else {
			o.Match = float64(o.Err) <= r.Tol
		}
		if !sameBits(g.vals, again[i].vals) {
			r.Deterministic = false
		}
		if worse(o.Err, r.Err) {
			r.Err, r.Worst = o.Err, w.name
		}
		r.Pass = r.Pass && o.Match
		r.Outputs = append(r.Outputs, o)
	}
	r.Pass = r.Pass && r.Deterministic
	return r
}

// TestDeviceOpsMatchCPU runs every case of opCases on both backends, first
// with views aligned to 256 bytes, then again at an odd element offset
// (as the model's small parameters sit in its arena); the odd pass comes
// last so that a misaligned access, which spoils the CUDA context, cannot
// hide the results of the aligned one.
func TestDeviceOpsMatchCPU(t *testing.T) {
	gpu := device(t)
	t.Logf("device %s, backend %s", gpu.DeviceName(), gpu.Name())
	defer saveReport(t, gpu)
	for _, pad := range []int{64, 5} {
		for _, c := range opCases() {
			c.pad = pad
			if pad != 64 {
				c.name = fmt.Sprintf("offset%d/%s", pad, c.name)
			}
			t.Run(c.name, func(t *testing.T) {
				r := check(t, gpu, c)
				record(r)
				switch {
				case r.Error != "":
					t.Errorf("GPU: %s", r.Error)
				case !r.Deterministic:
					t.Errorf("two GPU runs of the same inputs differ (ops must be deterministic)")
				case !r.Pass:
					for _, o := range r.Outputs {
						if !o.Match {
							t.Errorf("output %s: normalised error %.3g (tol %.0g, bit-exact %v)", o.Name, float64(o.Err), r.Tol, o.Exact)
						}
					}
				}
			})
		}
	}
}

// opCases lists the cases. Each names the op and its shape; a case's
// outputs are everything it wrote, plus (added by finish) the guards.
func opCases() []opCase {
	var cs []opCase
	add := func(kind, name string, run func(e *opEnv)) {
		cs = append(cs, opCase{name: name, kind: kind, run: run})
	}
	memoryCases(add)
	gemmCases(add)
	elementwiseCases(add)
	rowCases(add)
	attentionCases(add)
	lossCases(add)
	return cs
}

type addFunc func(kind, name string, run func(e *opEnv))

// memoryCases: Load/Store/Load64/Store64, Fill, Copy, ToBF16 — moves and
// roundings with one right answer, so bit-exact.
func memoryCases(add addFunc) {
	for _, n := range []int{1, 7, 4099, 1<<20 + 3} {
		add(kindExact, fmt.Sprintf("LoadStore/%d", n), func(e *opEnv) {
			t := e.in(n)
			e.out("Store", t)
			e.out64("Store64", t) // widening is exact
			h := make([]float64, n)
			for i := range h {
				h[i] = e.rng.NormFloat64() * math.Pow(10, float64(e.rng.IntN(9)-4))
			}
			t64 := e.zeros(n)
			e.be.Load64(t64, h) // rounds to nearest float32
			e.out64("Load64", t64)
		})
		add(kindExact, fmt.Sprintf("Fill/%d", n), func(e *opEnv) {
			a, b := e.in(n), e.in(n)
			e.be.Fill(a, 2.5)
			e.be.Fill(b, 0)
			c := e.in(n)
			e.be.Fill(c.View(n/3, n-n/3), -1e-3)
			e.out("2.5", a)
			e.out("0", b)
			e.out("part", c)
		})
		add(kindExact, fmt.Sprintf("Copy/%d", n), func(e *opEnv) {
			a, d := e.in(n), e.in(n)
			e.be.Copy(d, a)
			e.out("dst", d)
			// Between two views of one allocation.
			p := e.in(2 * n)
			e.be.Copy(p.View(0, n), p.View(n, n))
			e.out("views", p)
		})
		add(kindExact, fmt.Sprintf("ToBF16/%d", n), func(e *opEnv) {
			h := make([]float32, n)
			for i := range h {
				h[i] = float32(e.rng.NormFloat64() * math.Pow(10, float64(e.rng.IntN(21)-10)))
			}
			d := e.bf16(n)
			e.be.ToBF16(d, e.load(h))
			e.outBF16("bf16", d)
		})
	}
	// Rounding's corners: ties to even both ways, carries into the
	// exponent, overflow to Inf, NaN kept a NaN, the smallest normals.
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1,
		1 + 1.0/256, 1 + 3.0/256, -(1 + 1.0/256), 1 + 1.0/256 + 1.0/(1<<20), 1 + 255.0/256,
		math.Float32frombits(0x3f7fffff), math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000),
		math.MaxFloat32, -math.MaxFloat32, 3.38e38, 3.39e38, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc12345),
		1e-37, -1e-37, math.Float32frombits(0x00800000), 65504, 1e10, -123.456}
	add(kindExact, "ToBF16/special", func(e *opEnv) {
		d := e.bf16(len(special))
		e.be.ToBF16(d, e.load(special))
		e.outBF16("bf16", d)
	})
	// Subnormals apart: a GPU built to flush them to zero fails here
	// alone (the CPU keeps them).
	subnormal := []float32{1e-40, -3e-41, math.Float32frombits(1), math.Float32frombits(0x00018000), math.Float32frombits(0x807fffff)}
	add(kindExact, "ToBF16/subnormal", func(e *opEnv) {
		d := e.bf16(len(subnormal))
		e.be.ToBF16(d, e.load(subnormal))
		e.outBF16("bf16", d)
	})
}

// gemmCases: Gemm in every layout with and without acc, tiny to the
// model's shapes (1024 rows of a training micro-batch, one decoding row
// through the MLP), and GemmBF16NT.
func gemmCases(add addFunc) {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 65}, {3, 0, 5}, {23, 129, 70},
		{1, 768, 3072}, {1024, 704, 256}, {1024, 256, 704}, {128, 1024, 3072}}
	for _, s := range shapes {
		m, k, n := s[0], s[1], s[2]
		for _, l := range []kernels.Layout{kernels.NN, kernels.NT, kernels.TN} {
			for _, acc := range []bool{false, true} {
				add(kindF32, fmt.Sprintf("Gemm%s/%dx%dx%d/acc=%v", l, m, k, n, acc), func(e *opEnv) {
					out := e.in(m * n) // overwritten unless acc
					e.be.Gemm(l, out, e.in(m*k), e.in(k*n), m, k, n, acc)
					e.out("out", out)
				})
			}
		}
	}
	bshapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 65}, {3, 0, 5}, {23, 129, 70},
		{1, 768, 3072}, {1, 1024, 32000}, {64, 1024, 3072}, {1024, 256, 704}, {48, 4096, 256}}
	for _, s := range bshapes {
		m, k, n := s[0], s[1], s[2]
		for _, acc := range []bool{false, true} {
			add(kindBF16, fmt.Sprintf("GemmBF16NT/%dx%dx%d/acc=%v", m, k, n, acc), func(e *opEnv) {
				out := e.in(m * n)
				b := e.bf16(k * n)
				e.be.ToBF16(b, e.in(k*n))
				e.be.GemmBF16NT(out, e.in(m*k), b, m, k, n, acc)
				e.out("out", out)
			})
		}
	}
}

// elementwiseCases: Add (and its aliasing), Scale, SumSq, AllFinite,
// SwiGLU and its backward, AdamW.
func elementwiseCases(add addFunc) {
	for _, n := range []int{1, 7, 5000, 70001, 1<<20 + 3} {
		add(kindF32, fmt.Sprintf("Add/%d", n), func(e *opEnv) {
			a, b, out := e.in(n), e.in(n), e.in(n)
			e.be.Add(out, a, b)
			e.out("out", out)
		})
		add(kindF32, fmt.Sprintf("Add/alias/%d", n), func(e *opEnv) {
			a, b, c := e.in(n), e.in(n), e.in(n)
			e.be.Add(a, a, b) // out = a
			e.be.Add(c, b, c) // out = b
			e.be.Add(b, b, b) // out = a = b
			e.out("out=a", a)
			e.out("out=b", c)
			e.out("out=a=b", b)
		})
		add(kindF32, fmt.Sprintf("Scale/%d", n), func(e *opEnv) {
			a := e.in(n)
			e.be.Scale(a, 0.37)
			e.out("x", a)
		})
		add(kindF32, fmt.Sprintf("SumSq/%d", n), func(e *opEnv) {
			e.val("sumsq", false, e.be.SumSq(e.in(n)))
			big := e.load(e.normals(n, 1e18)) // float32 squares would overflow
			e.val("sumsq(1e18·x)", false, e.be.SumSq(big))
		})
		add(kindExact, fmt.Sprintf("AllFinite/%d", n), func(e *opEnv) {
			h := e.normals(n, 1)
			e.val("clean", true, b2f(e.be.AllFinite(e.load(h))))
			h[0] = math.MaxFloat32 // finite, though its square is not
			e.val("max float", true, b2f(e.be.AllFinite(e.load(h))))
			for _, bad := range []struct {
				at int
				v  float64
			}{{n - 1, math.NaN()}, {0, math.Inf(1)}, {n / 2, math.Inf(-1)}} {
				b := append([]float32(nil), h...)
				b[bad.at] = float32(bad.v)
				e.val(fmt.Sprintf("%v at %d", bad.v, bad.at), true, b2f(e.be.AllFinite(e.load(b))))
			}
		})
		add(kindF32, fmt.Sprintf("SwiGLU/%d", n), func(e *opEnv) {
			g, u, out := e.load(gates(e, n)), e.in(n), e.in(n)
			e.be.SwiGLU(out, g, u)
			e.out("out", out)
		})
		add(kindF32, fmt.Sprintf("SwiGLUBackward/%d", n), func(e *opEnv) {
			g, u := e.load(gates(e, n)), e.in(n)
			dg, du := e.in(n), e.in(n)
			e.be.SwiGLUBackward(dg, du, e.in(n), g, u)
			e.out("dgate", dg)
			e.out("dup", du)
		})
	}
	for _, n := range []int{1, 4099, 1<<20 + 3} {
		// Three steps from seeded moments with a fresh gradient each,
		// clipping folded into GradScale, decoupled decay.
		add(kindF32, fmt.Sprintf("AdamW/%d/decay", n), func(e *opEnv) {
			p, m, v := e.in(n), e.in(n), e.pos(n)
			for s := 1; s <= 3; s++ {
				e.be.AdamWUpdate(p, e.in(n), m, v, kernels.AdamW{LR: 1e-2, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1, GradScale: 0.5, Step: s})
			}
			e.out("p", p)
			e.out("m", m)
			e.out("v", v)
		})
		// A fresh optimizer (zero moments, the first steps' large bias
		// correction), no decay, no scaling, small gradients near eps.
		add(kindF32, fmt.Sprintf("AdamW/%d/fresh", n), func(e *opEnv) {
			p, m, v := e.in(n), e.zeros(n), e.zeros(n)
			for s := 1; s <= 5; s++ {
				g := e.load(e.normals(n, math.Pow(10, float64(-s))))
				e.be.AdamWUpdate(p, g, m, v, kernels.AdamW{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-6, GradScale: 1, Step: s})
			}
			e.out("p", p)
			e.out("m", m)
			e.out("v", v)
		})
	}
}

// gates are SwiGLU gate values with tails: sigmoid saturating both ways.
func gates(e *opEnv, n int) []float32 {
	h := e.normals(n, 4)
	for i := 0; i < n; i += 97 {
		h[i] = float32(100 * (2*e.rng.Float64() - 1))
	}
	return h
}

// rowCases: ops over rows of C: BiasAdd/BiasBackward, Embedding and its
// backward, RMSNorm and its backward, RoPE and its backward.
func rowCases(add addFunc) {
	for _, s := range [][2]int{{1, 1}, {5, 3}, {130, 33}, {1024, 768}, {1000, 1024}} {
		rows, n := s[0], s[1]
		add(kindF32, fmt.Sprintf("BiasAdd/%dx%d", rows, n), func(e *opEnv) {
			out := e.in(rows * n)
			e.be.BiasAdd(out, e.in(n), rows, n)
			e.out("out", out)
		})
		add(kindF32, fmt.Sprintf("BiasBackward/%dx%d", rows, n), func(e *opEnv) {
			db := e.in(n)
			e.be.BiasBackward(db, e.in(rows*n), rows, n)
			e.out("dbias", db)
		})
	}
	// V, C, rows, and the tokens' range (small: every row repeats).
	for _, s := range [][4]int{{11, 1, 1, 11}, {11, 3, 5, 11}, {11, 33, 130, 11}, {512, 256, 1024, 512}, {4096, 1024, 512, 4096}, {5, 64, 4096, 2}} {
		V, C, rows, hi := s[0], s[1], s[2], s[3]
		add(kindF32, fmt.Sprintf("Embedding/V%dC%d/rows%d", V, C, rows), func(e *opEnv) {
			table, out := e.in(V*C), e.in(rows*C)
			e.be.Embedding(out, table, e.ints(rows, hi), C)
			e.out("out", out)
		})
		add(kindF32, fmt.Sprintf("EmbeddingBackward/V%dC%d/rows%d/tokens<%d", V, C, rows, hi), func(e *opEnv) {
			dtable := e.in(V * C)
			e.be.EmbeddingBackward(dtable, e.in(rows*C), e.ints(rows, hi), C)
			e.out("dtable", dtable)
		})
	}
	for _, s := range [][2]int{{1, 1}, {5, 3}, {130, 33}, {64, 1024}, {1024, 256}, {4096, 128}, {7, 3072}} {
		rows, C := s[0], s[1]
		add(kindF32, fmt.Sprintf("RMSNorm/%dx%d", rows, C), func(e *opEnv) {
			x, w := e.in(rows*C), e.in(C)
			out, rstd := e.in(rows*C), e.in(rows)
			e.be.RMSNorm(out, rstd, x, w, rows, C, 1e-6)
			e.out("out", out)
			e.out("rstd", rstd)
			out2 := e.in(rows * C)
			e.be.RMSNorm(out2, kernels.Tensor{}, x, w, rows, C, 1e-6) // rstd not saved
			e.out("out (no rstd)", out2)
		})
		add(kindF32, fmt.Sprintf("RMSNormBackward/%dx%d", rows, C), func(e *opEnv) {
			xh := e.normals(rows*C, 1)
			x, w, rstd := e.load(xh), e.in(C), e.load(rstdOf(xh, rows, C, 1e-6))
			dout := e.in(rows * C)
			dx, dw := e.in(rows*C), e.in(C)
			e.be.RMSNormBackward(dx, dw, dout, x, w, rstd, rows, C)
			e.out("dx", dx)
			e.out("dw", dw)
			dx2 := e.in(rows * C)
			e.be.RMSNormBackward(dx2, kernels.Tensor{}, dout, x, w, rstd, rows, C) // frozen weight
			e.out("dx (no dw)", dx2)
		})
	}
	// rows, heads, hd, positions below, theta. Large positions check that
	// the angle pos·θ^(−2i/hd) is formed as precisely as the CPU's (in
	// float64): in float32 it is off by ~1e-4 at position 4000.
	for _, s := range []struct {
		rows, H, hd, maxPos int
		theta               float64
	}{{1, 1, 2, 10, 1e4}, {3, 2, 6, 100, 1e4}, {70, 4, 32, 4000, 1e6}, {33, 16, 128, 4000, 1e6}, {17, 8, 128, 40960, 1e6}, {1024, 8, 32, 2048, 1e6}} {
		rows, H, hd, maxPos, theta := s.rows, s.H, s.hd, s.maxPos, s.theta
		name := fmt.Sprintf("%dx%dx%d/pos<%d", rows, H, hd, maxPos)
		add(kindF32, "RoPE/"+name, func(e *opEnv) {
			x, out := e.in(rows*H*hd), e.in(rows*H*hd)
			pos := e.ints(rows, maxPos)
			e.be.RoPE(out, x, pos, rows, H, hd, theta)
			e.out("out", out)
			e.be.RoPE(x, x, pos, rows, H, hd, theta) // in place
			e.out("in place", x)
		})
		add(kindF32, "RoPEBackward/"+name, func(e *opEnv) {
			dx := e.in(rows * H * hd)
			e.be.RoPEBackward(dx, e.in(rows*H*hd), e.ints(rows, maxPos), rows, H, hd, theta)
			e.out("dx", dx)
		})
	}
}

// rstdOf is 1/sqrt(mean(x²)+eps) per row, in float64, rounded once: the
// backward cases get the same saved rstd on both backends.
func rstdOf(x []float32, rows, C int, eps float64) []float32 {
	r := make([]float32, rows)
	for i := range r {
		var s float64
		for _, v := range x[i*C : i*C+C] {
			s += float64(v) * float64(v)
		}
		r[i] = float32(1 / math.Sqrt(s/float64(C)+eps))
	}
	return r
}

// attnShape is one attention configuration; GQA throughout (H/KVH > 1)
// but for hd = 6, the tiny preset's odd head size.
type attnShape struct{ H, KVH, hd int }

// attentionCases: Attention/AttentionBackward over several B, T (T not a
// multiple of 32 or 64 among them), AttentionKV over several spans per
// call with and without a prefix split, CacheWrite and CacheCopy (seen
// through AttentionKV: a cache's layout is the backend's own).
func attentionCases(add addFunc) {
	for _, s := range []struct {
		B, T int
		attnShape
	}{{1, 1, attnShape{4, 2, 32}}, {1, 7, attnShape{4, 2, 6}}, {2, 33, attnShape{4, 2, 32}}, {1, 64, attnShape{4, 2, 64}},
		{2, 100, attnShape{4, 2, 128}}, {1, 130, attnShape{4, 2, 32}}, {2, 257, attnShape{4, 2, 64}},
		{1, 129, attnShape{8, 2, 32}}, {1, 200, attnShape{16, 8, 128}}} {
		B, T, H, KVH, hd := s.B, s.T, s.H, s.KVH, s.hd
		name := fmt.Sprintf("B%dT%dH%dKV%dhd%d", B, T, H, KVH, hd)
		N := B * T
		add(kindF32, "Attention/"+name, func(e *opEnv) {
			q, k, v := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
			out, lse := e.in(N*H*hd), e.in(B*H*T)
			e.be.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
			e.out("out", out)
			e.out("lse", lse)
		})
		add(kindF32, "AttentionBackward/"+name, func(e *opEnv) {
			q, k, v := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
			out, lse := e.zeros(N*H*hd), e.zeros(B*H*T)
			e.be.Attention(out, lse, q, k, v, B, T, H, KVH, hd) // each backend's own forward
			dq, dk, dv := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
			e.be.AttentionBackward(dq, dk, dv, e.in(N*H*hd), out, lse, q, k, v, B, T, H, KVH, hd)
			e.out("dq", dq)
			e.out("dk", dk)
			e.out("dv", dv)
		})
		if hd != 32 && hd != 128 {
			continue
		}
		// The thread-per-row kernels (WHALE_CUDA_ATTN_FWD/BWD=thread)
		// stay as strict as the default ones.
		add(kindF32, "AttentionThreadKernels/"+name, func(e *opEnv) {
			if g, ok := e.be.(*cuda.Backend); ok {
				g.SetThreadAttention(true, true)
				defer g.SetThreadAttention(false, false)
			}
			q, k, v := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
			out, lse := e.zeros(N*H*hd), e.zeros(B*H*T)
			e.be.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
			dq, dk, dv := e.in(N*H*hd), e.in(N*KVH*hd), e.in(N*KVH*hd)
			e.be.AttentionBackward(dq, dk, dv, e.in(N*H*hd), out, lse, q, k, v, B, T, H, KVH, hd)
			e.out("out", out)
			e.out("lse", lse)
			e.out("dq", dq)
			e.out("dk", dk)
			e.out("dv", dv)
		})
	}
	for _, s := range []attnShape{{4, 2, 32}, {4, 2, 128}, {8, 2, 32}, {4, 2, 6}, {16, 8, 128}} {
		name := fmt.Sprintf("H%dKV%dhd%d", s.H, s.KVH, s.hd)
		for _, split := range []bool{false, true} {
			add(kindF32, fmt.Sprintf("AttentionKV/%s/split=%v", name, split), func(e *opEnv) {
				k := newKVCall(e, s, kvSpecs, split)
				e.out("out", k.attend(e))
			})
		}
		add(kindF32, "CacheCopy/"+name, func(e *opEnv) { cacheCopyCase(e, s) })
	}
}

// kvSpec is one sequence of an AttentionKV call: rows query rows at
// positions pos0.., with the first pn positions (a multiple of
// kernels.KVBlock) in a prefix cache when the call is split.
type kvSpec struct{ pos0, rows, pn int }

// kvSpecs: prefill from the start; prefill continuing after a one-block
// prefix; a decoding row after a two-block prefix; a decoding row with no
// prefix; prefill across a block boundary in one cache.
var kvSpecs = []kvSpec{{0, 37, 0}, {131, 6, 128}, {299, 1, 256}, {200, 1, 0}, {100, 60, 0}}

// kvCall is the spans of one AttentionKV call with their queries.
type kvCall struct {
	s     attnShape
	spans []kernels.KVSpan
	q     kernels.Tensor
	rows  int
}

// newKVCall fills a cache pair per spec (in two CacheWrite calls, the
// second at pos0 > 0) and, when split, moves each spec's first pn
// positions to a prefix cache with room to spare and the rest to a cache
// of its own, as the sampler lays out a shared prompt.
func newKVCall(e *opEnv, s attnShape, specs []kvSpec, split bool) *kvCall {
	w := s.KVH * s.hd
	c := &kvCall{s: s}
	for _, sp := range specs {
		n := sp.pos0 + sp.rows
		cp := n + 3
		kc, vc := e.zeros(w*cp), e.zeros(w*cp)
		kh, vh := e.in(n*w), e.in(n*w)
		h := n / 2
		for kind, kv := range [][2]kernels.Tensor{{kc, kh}, {vc, vh}} {
			e.be.CacheWrite(kv[0], kv[1].View(0, h*w), kernels.KVKind(kind), 0, h, s.KVH, s.hd, cp)
			e.be.CacheWrite(kv[0], kv[1].View(h*w, (n-h)*w), kernels.KVKind(kind), h, n-h, s.KVH, s.hd, cp)
		}
		span := kernels.KVSpan{K: kc, V: vc, Cap: cp, QRow: c.rows, Rows: sp.rows, Pos0: sp.pos0}
		if split && sp.pn > 0 {
			pcap, ocap := sp.pn+5, n-sp.pn+2
			pk, pv, ok, ov := e.zeros(w*pcap), e.zeros(w*pcap), e.zeros(w*ocap), e.zeros(w*ocap)
			e.be.CacheCopy(pk, kc, kernels.Keys, 0, 0, sp.pn, s.KVH, s.hd, pcap, cp)
			e.be.CacheCopy(pv, vc, kernels.Values, 0, 0, sp.pn, s.KVH, s.hd, pcap, cp)
			e.be.CacheCopy(ok, kc, kernels.Keys, 0, sp.pn, n-sp.pn, s.KVH, s.hd, ocap, cp)
			e.be.CacheCopy(ov, vc, kernels.Values, 0, sp.pn, n-sp.pn, s.KVH, s.hd, ocap, cp)
			span.K, span.V, span.Cap = ok, ov, ocap
			span.PK, span.PV, span.PCap, span.PN = pk, pv, pcap, sp.pn
		}
		c.spans = append(c.spans, span)
		c.rows += sp.rows
	}
	c.q = e.in(c.rows * s.H * s.hd)
	return c
}

// attend runs the call into a fresh output (garbage-filled: every row
// must be written).
func (c *kvCall) attend(e *opEnv) kernels.Tensor {
	out := e.in(c.rows * c.s.H * c.s.hd)
	e.be.AttentionKV(out, c.q, c.spans, c.s.H, c.s.KVH, c.s.hd)
	return out
}

// cacheCopyCase moves a sequence's cache into a larger one in two chunks
// (srcPos, dstPos > 0), through a shifted copy (dstPos ≠ srcPos) and back,
// and attends with the result.
func cacheCopyCase(e *opEnv, s attnShape) {
	w := s.KVH * s.hd
	c := newKVCall(e, s, []kvSpec{{150, 40, 0}}, false)
	src := c.spans[0]
	n := 190
	bigCap, shiftCap := n+20, n+9
	for i, t := range []kernels.Tensor{src.K, src.V} {
		big, shifted, back := e.zeros(w*bigCap), e.zeros(w*shiftCap), e.zeros(w*bigCap)
		kind := kernels.KVKind(i)
		e.be.CacheCopy(big, t, kind, 0, 0, 70, s.KVH, s.hd, bigCap, src.Cap)
		e.be.CacheCopy(big, t, kind, 70, 70, n-70, s.KVH, s.hd, bigCap, src.Cap)
		e.be.CacheCopy(shifted, big, kind, 7, 0, n, s.KVH, s.hd, shiftCap, bigCap)
		e.be.CacheCopy(back, shifted, kind, 0, 7, n, s.KVH, s.hd, bigCap, shiftCap)
		if i == 0 {
			c.spans[0].K = back
		} else {
			c.spans[0].V = back
		}
	}
	c.spans[0].Cap = bigCap
	e.out("out", c.attend(e))
}

// lossCases: CrossEntropy with rows of weight 0 (their targets −1, unread),
// a row of huge logits (the max must come out before exp), dlogits
// aliasing logits, and dlogits zero.
func lossCases(add addFunc) {
	for _, s := range [][2]int{{1, 1}, {5, 7}, {37, 513}, {64, 32000}, {8, 151936}} {
		rows, V := s[0], s[1]
		name := fmt.Sprintf("%dx%d", rows, V)
		setup := func(e *opEnv) (kernels.Tensor, []int32, []float32) {
			h := e.normals(rows*V, 3)
			for j := range V {
				h[j] += 500
			}
			tg := e.ints(rows, V)
			w := make([]float32, rows)
			for i := range w {
				switch {
				case i%3 == 1:
					tg[i] = -1
				case i%3 == 2:
					w[i] = 1 / float32(rows)
				default:
					w[i] = 0.25
				}
			}
			return e.load(h), tg, w
		}
		add(kindF32, "CrossEntropy/"+name, func(e *opEnv) {
			logits, tg, w := setup(e)
			loss, dl := e.in(rows), e.in(rows*V)
			e.be.CrossEntropy(loss, dl, logits, tg, w, rows, V)
			e.out("loss", loss)
			e.out("dlogits", dl)
			e.out("logits", logits)
		})
		add(kindF32, "CrossEntropy/inplace/"+name, func(e *opEnv) {
			logits, tg, w := setup(e)
			loss := e.in(rows)
			e.be.CrossEntropy(loss, logits, logits, tg, w, rows, V)
			e.out("loss", loss)
			e.out("dlogits", logits)
		})
		add(kindF32, "CrossEntropy/nograd/"+name, func(e *opEnv) {
			logits, tg, w := setup(e)
			loss := e.in(rows)
			e.be.CrossEntropy(loss, kernels.Tensor{}, logits, tg, w, rows, V)
			e.out("loss", loss)
			e.out("logits", logits)
		})
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
	inv := func(name string, f func(e *opEnv) (a, b []float32)) {
		t.Run(name, func(t *testing.T) {
			r := caseResult{Name: "invariant/" + name, Kind: kindInvariant, Deterministic: true}
			func() {
				defer func() {
					if p := recover(); p != nil {
						r.Error = fmt.Sprintf("panic: %v", p)
					}
				}()
				e := newEnv(gpu, 64)
				a, b := f(e)
				e.finish()
				r.Err = num(normErr(widen(a), widen(b)))
				r.Pass = sameBits(widen(a), widen(b))
			}()
			if r.Error != "" {
				r.Err = num(math.Inf(1))
				t.Errorf("GPU: %s", r.Error)
			} else if !r.Pass {
				t.Errorf("not bit-identical: normalised difference %.3g", float64(r.Err))
			}
			record(r)
		})
	}
	store := func(e *opEnv, t kernels.Tensor) []float32 {
		h := make([]float32, t.Len())
		e.be.Store(h, t)
		return h
	}
	for _, s := range []attnShape{{8, 2, 32}, {16, 8, 128}} {
		name := fmt.Sprintf("H%dKV%dhd%d", s.H, s.KVH, s.hd)
		inv("AttentionKV/split-vs-whole/"+name, func(e *opEnv) (a, b []float32) {
			whole := newKVCall(e, s, kvSpecs, false)
			e.rng = rand.New(rand.NewPCG(1, 2))
			split := newKVCall(e, s, kvSpecs, true)
			return store(e, whole.attend(e)), store(e, split.attend(e))
		})
		inv("AttentionKV/span-alone-vs-batched/"+name, func(e *opEnv) (a, b []float32) {
			c := newKVCall(e, s, kvSpecs, true)
			all := store(e, c.attend(e))
			var alone []float32
			W := s.H * s.hd
			for _, sp := range c.spans {
				one := sp
				one.QRow = 0
				q := c.q.View(sp.QRow*W, sp.Rows*W)
				out := e.in(sp.Rows * W)
				e.be.AttentionKV(out, q, []kernels.KVSpan{one}, s.H, s.KVH, s.hd)
				alone = append(alone, store(e, out)...)
			}
			return all, alone
		})
		inv("AttentionKV/row-alone-vs-prefill/"+name, func(e *opEnv) (a, b []float32) {
			c := newKVCall(e, s, []kvSpec{{100, 60, 0}}, false)
			all := store(e, c.attend(e))
			W := s.H * s.hd
			var rows, alone []float32
			for r := 0; r < 60; r += 13 {
				one := c.spans[0]
				one.QRow, one.Rows, one.Pos0 = 0, 1, 100+r
				out := e.in(W)
				e.be.AttentionKV(out, c.q.View(r*W, W), []kernels.KVSpan{one}, s.H, s.KVH, s.hd)
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
			inv(fmt.Sprintf("%s/rows-alone-vs-%d/k%dn%d", op, R, k, n), func(e *opEnv) (a, b []float32) {
				x := e.in(R * k)
				var w kernels.Tensor
				if bf {
					w = e.bf16(k * n)
					e.be.ToBF16(w, e.in(k*n))
				} else {
					w = e.in(k * n)
				}
				gemm := func(out, x kernels.Tensor, m int) {
					if bf {
						e.be.GemmBF16NT(out, x, w, m, k, n, false)
					} else {
						e.be.Gemm(kernels.NT, out, x, w, m, k, n, false)
					}
				}
				block := e.zeros(R * n)
				gemm(block, x, R)
				var alone []float32
				for r := range R {
					out := e.zeros(n)
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
	inv("uploads/many-between-syncs", func(e *opEnv) (a, b []float32) {
		const V, C, calls, rows, big = 1000, 8, 1500, 200, 300_000
		th := e.normals(V*C, 1)
		table := e.load(th)
		toks := e.ints(calls*rows+big, V)
		out := e.zeros((calls*rows + big) * C)
		for i := range calls {
			e.be.Embedding(out.View(i*rows*C, rows*C), table, toks[i*rows:(i+1)*rows], C)
		}
		e.be.Embedding(out.View(calls*rows*C, big*C), table, toks[calls*rows:], C)
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
	inv("CacheWrite/queued-vs-host", func(e *opEnv) (a, b []float32) {
		const KVH, hd, cp, nc, steps = 2, 32, 16, 40, 6
		w, size := KVH*hd, KVH*cp*hd
		arena := e.zeros(nc * size)
		srcH := e.normals((steps*nc+4)*w, 1)
		src := e.load(srcH)
		host := make([]float32, nc*size)
		write := func(c int, from kernels.Tensor, hs []float32, pos, rows int) {
			e.be.CacheWrite(arena.View(c*size, size), from, kernels.Keys, pos, rows, KVH, hd, cp)
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
	inv("CacheWrites/batched-vs-host", func(e *opEnv) (a, b []float32) {
		const KVH, hd, cp, nc = 2, 32, 80, 40
		w, size := KVH*hd, KVH*cp*hd
		arena := e.zeros(nc * size)
		srcH := e.normals((nc+4+70)*w, 1)
		src := e.load(srcH)
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
	inv("profile/counts", func(e *opEnv) (a, b []float32) {
		x, y, out := e.in(64*32), e.in(32*16), e.zeros(64*16)
		was := gpu.Profiling()
		if err := gpu.EnableProfile(true); err != nil {
			panic(err)
		}
		defer gpu.EnableProfile(was)
		if err := gpu.ProfileReset(); err != nil {
			panic(err)
		}
		for range 3 {
			e.be.Gemm(kernels.NN, out, x, y, 64, 32, 16, false)
		}
		for range 2 {
			e.be.Add(out, out, out)
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
	CPU        []float64 `json:"cpu_loss"`
	GPU        []float64 `json:"gpu_loss"`
	MaxAbsDiff num       `json:"max_abs_diff"`
	WorstStep  int       `json:"worst_step"`
	Pass       bool      `json:"pass"`
	Error      string    `json:"error,omitempty"`
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
			r.MaxAbsDiff, r.Pass = num(worst), worst <= r.Tol
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
