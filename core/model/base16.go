package model

import (
	"errors"
	"fmt"

	"whale/kernels"
)

// bf16Base holds a LoRA model's frozen weights in bfloat16 only
// (FreezeBF16): every matrix in base, laid out as the parameter arena,
// and the norms' and biases' float values in vec (they are tiny, and
// RMSNorm and the bias add read floats).
type bf16Base struct {
	base kernels.Tensor // bfloat16, the arena's layout
	wb   weights        // views of base
	vec  kernels.Tensor // float: the vector parameters
	// vecParams are the vector parameters at their offsets in vec.
	vecParams []ParamInfo
	vecAt     map[string]int // name → offset in vec
}

// isVector reports whether p stays float under a bfloat16 base.
func isVector(p ParamInfo) bool { return p.kind == kindNorm || p.kind == kindBias }

// FreezeBF16 (also EnableLoRA with LoRAConfig.BF16Base) keeps the frozen
// weights of a LoRA model in bfloat16 only,
// rounded to nearest even, and frees their float copy: the matrices then
// take half the memory, and training reads them through the backend's
// bfloat16 products (kernels.BF16Base), accumulating in float32; the
// adapters, the norms and the biases stay float32. The model is then
// the float model of the rounded weights: its outputs and gradients are
// that model's up to summation order. Samplers read the same bfloat16
// weights (whatever SamplerOptions.BF16 says), so there is no second
// copy. It must come after EnableLoRA and before the first training step
// and WithAdapters.
func (m *Model) FreezeBF16() error {
	switch {
	case m.lora == nil:
		return errors.New("model: a bfloat16 base needs LoRA: only frozen weights can be held in bfloat16")
	case m.frozen != nil:
		return errors.New("model: the base is already bfloat16")
	case !m.grad.IsZero():
		return errors.New("model: the base must be made bfloat16 before the model trains")
	}
	if err := m.canHoldBF16(); err != nil {
		return err
	}
	f := &bf16Base{base: m.be.AllocBF16(m.arena.Len()), vecAt: map[string]int{}}
	m.be.ToBF16(f.base, m.arena)
	n := 0
	for _, p := range m.params {
		if isVector(p) {
			q := p
			q.Offset, f.vecAt[p.Name] = n, n
			f.vecParams = append(f.vecParams, q)
			n += p.Len
		}
	}
	f.vec = m.be.Alloc(n)
	for _, q := range f.vecParams {
		p := m.params[m.index[q.Name]]
		m.be.Copy(f.vec.View(q.Offset, q.Len), m.arena.View(p.Offset, p.Len))
	}
	f.wb = bind(m.Config, m.params, f.base)
	m.frozen = f
	m.w = m.bindFloat()
	m.lora.bindAdapters(&m.w, m.lora.arena)
	m.be.Free(m.arena)
	m.arena = kernels.Tensor{}
	m.version++
	m.baseVersion++
	return nil
}

// canHoldBF16 refuses a backend without the bfloat16 training ops.
func (m *Model) canHoldBF16() error {
	if _, ok := m.be.(kernels.BF16Base); !ok {
		return fmt.Errorf("model: backend %s cannot train over bfloat16 weights (it has no kernels.BF16Base)", m.be.Name())
	}
	return nil
}

// BaseBF16 reports whether the frozen weights are held in bfloat16
// (FreezeBF16).
func (m *Model) BaseBF16() bool { return m.frozen != nil }

// bindFloat returns the views of the float parameters: all of them, or
// under a bfloat16 base the vectors alone (its matrices' views are zero;
// frozenLayer has them).
func (m *Model) bindFloat() weights {
	if f := m.frozen; f != nil {
		return bind(m.Config, f.vecParams, f.vec)
	}
	return bind(m.Config, m.params, m.arena)
}

// frozenLayer returns layer l's bfloat16 weights under a bfloat16 base,
// else nil.
func (m *Model) frozenLayer(l int) *layerWeights {
	if m.frozen == nil {
		return nil
	}
	return &m.frozen.wb.layers[l]
}

// frozenHead returns the output head's bfloat16 weights under a
// bfloat16 base, else the zero tensor.
func (m *Model) frozenHead() kernels.Tensor {
	if m.frozen == nil {
		return kernels.Tensor{}
	}
	return m.frozen.wb.lmHead
}

// embed looks up the rows of tokens in the embedding into out (N,C).
func (m *Model) embed(out kernels.Tensor, tokens []int32) {
	if f := m.frozen; f != nil {
		m.be.(kernels.BF16Base).EmbeddingBF16(out, f.wb.embed, tokens, m.d.C)
		return
	}
	m.be.Embedding(out, m.w.embed, tokens, m.d.C)
}

// inputGrad: dx (N,in) (+)= dy (N,out) · W, W (out,in) in HF layout: a
// projection's input gradient, through W's bfloat16 copy wb when set.
func (m *Model) inputGrad(dx, dy, w, wb kernels.Tensor, N, out, in int, acc bool) {
	if !wb.IsZero() {
		m.be.(kernels.BF16Base).GemmBF16NN(dx, dy, wb, N, out, in, acc)
		return
	}
	m.be.Gemm(kernels.NN, dx, dy, w, N, out, in, acc)
}

// readParam copies parameter p's float values into dst (len p.Len):
// from the arena, or under a bfloat16 base from vec or widened from base.
func (m *Model) readParam(dst []float32, p ParamInfo) {
	f := m.frozen
	switch {
	case f == nil:
		m.be.Store(dst, m.arena.View(p.Offset, p.Len))
	case isVector(p):
		m.be.Store(dst, f.vec.View(f.vecAt[p.Name], p.Len))
	default:
		m.widen(dst, f.base.View(p.Offset, p.Len))
	}
}

// frozenValues is ParamValues under a bfloat16 base: the whole base
// widened (it has the arena's layout), then the vectors' float values.
func (m *Model) frozenValues() []float32 {
	f := m.frozen
	v := make([]float32, f.base.Len())
	m.widen(v, f.base)
	for _, q := range f.vecParams {
		p := m.params[m.index[q.Name]]
		m.be.Store(v[p.Offset:p.Offset+p.Len], f.vec.View(q.Offset, q.Len))
	}
	return v
}

// widen copies the bfloat16 tensor src, widened, into dst (len src.Len()),
// in blocks through one temporary of at most widenBlock floats.
func (m *Model) widen(dst []float32, src kernels.Tensor) {
	tmp := m.be.Alloc(min(widenBlock, src.Len()))
	defer m.be.Free(tmp)
	for o := 0; o < src.Len(); o += widenBlock {
		n := min(widenBlock, src.Len()-o)
		t := tmp.View(0, n)
		m.be.(kernels.BF16Base).FromBF16(t, src.View(o, n))
		m.be.Store(dst[o:o+n], t)
	}
}

// widenBlock bounds readParam's temporary (4 MB).
const widenBlock = 1 << 20
