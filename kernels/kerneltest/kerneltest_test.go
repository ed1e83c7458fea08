package kerneltest

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"whale/kernels"
)

// small is the table without its model-sized cases (cheap to run here).
func small() []Case {
	var cs []Case
	for _, c := range Cases() {
		if !c.Large {
			cs = append(cs, c)
		}
	}
	return cs
}

func TestTableNamesAreUniqueAndJudged(t *testing.T) {
	seen := map[string]bool{}
	ops := map[string]bool{}
	for _, c := range Cases() {
		if seen[c.Name] {
			t.Errorf("case %s twice", c.Name)
		}
		seen[c.Name] = true
		if !c.Exact {
			if _, ok := tolerances[c.Op][c.DType]; !ok {
				t.Errorf("case %s: no tolerance for op %s in %s", c.Name, c.Op, c.DType)
			}
		}
		ops[c.Op+"/"+string(c.DType)] = true
	}
	for op, byType := range tolerances {
		for dt := range byType {
			if !ops[op+"/"+string(dt)] {
				t.Errorf("tolerance for %s in %s judges no case", op, dt)
			}
		}
	}
}

// recorder notes which Backend methods a run calls.
type recorder struct {
	kernels.Backend
	called map[string]bool
}

func (r *recorder) note(m string) { r.called[m] = true }

func (r *recorder) Name() string               { r.note("Name"); return r.Backend.Name() }
func (r *recorder) Alloc(n int) kernels.Tensor { r.note("Alloc"); return r.Backend.Alloc(n) }
func (r *recorder) AllocBF16(n int) kernels.Tensor {
	r.note("AllocBF16")
	return r.Backend.AllocBF16(n)
}
func (r *recorder) Free(t kernels.Tensor) { r.note("Free"); r.Backend.Free(t) }
func (r *recorder) Load(d kernels.Tensor, s []float32) {
	r.note("Load")
	r.Backend.Load(d, s)
}
func (r *recorder) Store(d []float32, s kernels.Tensor) { r.note("Store"); r.Backend.Store(d, s) }
func (r *recorder) Load64(d kernels.Tensor, s []float64) {
	r.note("Load64")
	r.Backend.Load64(d, s)
}
func (r *recorder) Store64(d []float64, s kernels.Tensor) { r.note("Store64"); r.Backend.Store64(d, s) }
func (r *recorder) Fill(d kernels.Tensor, v float32)      { r.note("Fill"); r.Backend.Fill(d, v) }
func (r *recorder) Copy(d, s kernels.Tensor)              { r.note("Copy"); r.Backend.Copy(d, s) }
func (r *recorder) ToBF16(d, s kernels.Tensor)            { r.note("ToBF16"); r.Backend.ToBF16(d, s) }
func (r *recorder) Gemm(l kernels.Layout, out, a, b kernels.Tensor, m, k, n int, acc bool) {
	r.note("Gemm")
	r.Backend.Gemm(l, out, a, b, m, k, n, acc)
}
func (r *recorder) GemmBF16NT(out, a, b kernels.Tensor, m, k, n int, acc bool) {
	r.note("GemmBF16NT")
	r.Backend.GemmBF16NT(out, a, b, m, k, n, acc)
}
func (r *recorder) Add(out, a, b kernels.Tensor)      { r.note("Add"); r.Backend.Add(out, a, b) }
func (r *recorder) Scale(x kernels.Tensor, s float32) { r.note("Scale"); r.Backend.Scale(x, s) }
func (r *recorder) SumSq(x kernels.Tensor) float64    { r.note("SumSq"); return r.Backend.SumSq(x) }
func (r *recorder) AllFinite(x kernels.Tensor) bool {
	r.note("AllFinite")
	return r.Backend.AllFinite(x)
}
func (r *recorder) BiasAdd(out, bias kernels.Tensor, rows, n int) {
	r.note("BiasAdd")
	r.Backend.BiasAdd(out, bias, rows, n)
}
func (r *recorder) BiasBackward(db, dout kernels.Tensor, rows, n int) {
	r.note("BiasBackward")
	r.Backend.BiasBackward(db, dout, rows, n)
}
func (r *recorder) Embedding(out, table kernels.Tensor, tokens []int32, C int) {
	r.note("Embedding")
	r.Backend.Embedding(out, table, tokens, C)
}
func (r *recorder) EmbeddingBackward(dt, dout kernels.Tensor, tokens []int32, C int) {
	r.note("EmbeddingBackward")
	r.Backend.EmbeddingBackward(dt, dout, tokens, C)
}
func (r *recorder) RMSNorm(out, rstd, x, w kernels.Tensor, rows, C int, eps float64) {
	r.note("RMSNorm")
	r.Backend.RMSNorm(out, rstd, x, w, rows, C, eps)
}
func (r *recorder) RMSNormBackward(dx, dw, dout, x, w, rstd kernels.Tensor, rows, C int) {
	r.note("RMSNormBackward")
	r.Backend.RMSNormBackward(dx, dw, dout, x, w, rstd, rows, C)
}
func (r *recorder) RoPE(out, x kernels.Tensor, pos []int32, rows, heads, hd int, theta float64) {
	r.note("RoPE")
	r.Backend.RoPE(out, x, pos, rows, heads, hd, theta)
}
func (r *recorder) RoPEBackward(dx, dout kernels.Tensor, pos []int32, rows, heads, hd int, theta float64) {
	r.note("RoPEBackward")
	r.Backend.RoPEBackward(dx, dout, pos, rows, heads, hd, theta)
}
func (r *recorder) Attention(out, lse, q, k, v kernels.Tensor, B, T, H, KVH, hd int) {
	r.note("Attention")
	r.Backend.Attention(out, lse, q, k, v, B, T, H, KVH, hd)
}
func (r *recorder) AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v kernels.Tensor, B, T, H, KVH, hd int) {
	r.note("AttentionBackward")
	r.Backend.AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v, B, T, H, KVH, hd)
}
func (r *recorder) AttentionKV(out, q kernels.Tensor, spans []kernels.KVSpan, H, KVH, hd int) {
	r.note("AttentionKV")
	r.Backend.AttentionKV(out, q, spans, H, KVH, hd)
}
func (r *recorder) CacheWrite(cache, src kernels.Tensor, kind kernels.KVKind, pos0, rows, KVH, hd, cp int) {
	r.note("CacheWrite")
	r.Backend.CacheWrite(cache, src, kind, pos0, rows, KVH, hd, cp)
}
func (r *recorder) CacheCopy(dst, src kernels.Tensor, kind kernels.KVKind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap int) {
	r.note("CacheCopy")
	r.Backend.CacheCopy(dst, src, kind, dstPos, srcPos, n, KVH, hd, dstCap, srcCap)
}
func (r *recorder) SwiGLU(out, gate, up kernels.Tensor) {
	r.note("SwiGLU")
	r.Backend.SwiGLU(out, gate, up)
}
func (r *recorder) SwiGLUBackward(dg, du, dout, gate, up kernels.Tensor) {
	r.note("SwiGLUBackward")
	r.Backend.SwiGLUBackward(dg, du, dout, gate, up)
}
func (r *recorder) CrossEntropy(loss, dl, logits kernels.Tensor, targets []int32, weight []float32, rows, V int) {
	r.note("CrossEntropy")
	r.Backend.CrossEntropy(loss, dl, logits, targets, weight, rows, V)
}
func (r *recorder) AdamWUpdate(p, g, m, v kernels.Tensor, h kernels.AdamW) {
	r.note("AdamWUpdate")
	r.Backend.AdamWUpdate(p, g, m, v, h)
}

// TestTableCallsEveryBackendMethod: the table reaches every method of
// kernels.Backend (a method added to the interface fails here until a
// case calls it).
func TestTableCallsEveryBackendMethod(t *testing.T) {
	rec := &recorder{Backend: kernels.NewCPU(), called: map[string]bool{}}
	for _, c := range small() {
		if _, err := Run(rec, c, 5); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
	}
	rec.Name()
	it := reflect.TypeFor[kernels.Backend]()
	var missing []string
	for i := range it.NumMethod() {
		if m := it.Method(i).Name; !rec.called[m] {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("no case of the table calls %s", strings.Join(missing, ", "))
	}
}

// scaleOff is the CPU backend with a Scale 1e-3 off.
type scaleOff struct{ kernels.Backend }

func (b scaleOff) Scale(x kernels.Tensor, s float32) { b.Backend.Scale(x, s*1.001) }

// spill is the CPU backend whose Fill also writes the element after its
// view (into the guard).
type spill struct{ *kernels.CPU[float32] }

func (b spill) Fill(d kernels.Tensor, v float32) {
	b.CPU.Fill(d, v)
	buf, off := d.Storage()
	buf.([]float32)[off+d.Len()] = v
}

// flaky is the CPU backend whose Add rounds differently on every other
// call: within any tolerance, but not deterministic.
type flaky struct {
	kernels.Backend
	calls *int
}

func (b flaky) Add(out, a, x kernels.Tensor) {
	b.Backend.Add(out, a, x)
	if *b.calls++; *b.calls%2 == 0 {
		b.Backend.Scale(out, 1+1.0/(1<<20))
	}
}

// TestCheckCatchesBrokenBackends: a wrong op, a write outside a view and
// an op that is not deterministic each fail their cases, and only those;
// the CPU backend itself passes.
func TestCheckCatchesBrokenBackends(t *testing.T) {
	for _, tc := range []struct {
		name string
		be   kernels.Backend
		// ops whose cases must fail; every other case must pass.
		fail []string
		// what the failure says.
		says string
	}{
		{"cpu", kernels.NewCPU(), nil, ""},
		{"scale off", scaleOff{kernels.NewCPU()}, []string{"Scale"}, "normalised error"},
		{"spill", spill{kernels.NewCPU()}, []string{"Fill"}, "output guards: not bit-identical"},
		{"flaky", flaky{kernels.NewCPU(), new(int)}, []string{"Add"}, "two runs of the same inputs differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range small() {
				if !slices.Contains([]string{"Scale", "Fill", "Add", "Gemm", "Load"}, c.Op) {
					continue
				}
				r, err := Check(tc.be, Reference(), c, 5)
				if err != nil {
					t.Fatal(err)
				}
				if want := slices.Contains(tc.fail, c.Op); r.Pass == want {
					t.Errorf("%s: pass %v, want %v (%v)", c.Name, r.Pass, !want, r.Failures())
				} else if want && !strings.Contains(strings.Join(r.Failures(), "; "), tc.says) {
					t.Errorf("%s: failures %q do not say %q", c.Name, r.Failures(), tc.says)
				}
			}
		})
	}
}

// TestResultJSONHoldsWhatTheDeviceReportReads: kernels/cuda/check/
// combine.py reads these keys of every case, and an error that is NaN or
// infinite must still be JSON.
func TestResultJSONHoldsWhatTheDeviceReportReads(t *testing.T) {
	c := Cases()[0]
	r := Judge(c, []Output{{Name: "x", Vals: []float64{1}}}, []Output{{Name: "x", Vals: []float64{math.NaN()}}}, []Output{{Name: "x", Vals: []float64{math.NaN()}}})
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "kind", "tol", "err", "worst_output", "deterministic", "pass", "outputs"} {
		if _, ok := got[k]; !ok {
			t.Errorf("report line %s has no %q", data, k)
		}
	}
	if got["err"] != "NaN" || got["pass"] != false {
		t.Errorf("a NaN output: err %v, pass %v; want \"NaN\", false", got["err"], got["pass"])
	}
	for _, v := range []float64{math.Inf(1), math.Inf(-1)} {
		if b, err := json.Marshal(Num(v)); err != nil || string(b) != fmt.Sprintf("%q", fmt.Sprintf("%+v", v)) {
			t.Errorf("Num(%v) marshals to %s, %v", v, b, err)
		}
	}
}
