package model

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"whale/kernels"
)

// LoRA (Hu et al., 2021) adapts a frozen model: each targeted projection
// y = x·Wᵀ gains a low-rank term, y = x·Wᵀ + (α/r)·(x·Aᵀ)·Bᵀ, with A (r,in)
// and B (out,r) the only parameters trained. B starts at zero, so a fresh
// adapter leaves the model's outputs exactly as they were.

// LoRAConfig says which projections carry adapters and of what rank.
type LoRAConfig struct {
	Rank int `json:"rank"`
	// Alpha scales the adapters' term by Alpha/Rank.
	Alpha float64 `json:"alpha"`
	// Targets are projections among LoRATargets.
	Targets []string `json:"targets"`
	// BF16Base holds the frozen weights in bfloat16 only (FreezeBF16):
	// half their memory, rounded once when the adapters are enabled.
	BF16Base bool `json:"bf16_base,omitempty"`
}

// LoRATargets are the projections an adapter can sit on: the attention's
// q, k, v and o and the MLP's gate, up and down.
var LoRATargets = []string{"q", "k", "v", "o", "gate", "up", "down"}

// loraTarget indexes LoRATargets.
type loraTarget int

const (
	tQ loraTarget = iota
	tK
	tV
	tO
	tGate
	tUp
	tDown
	nTargets
)

// loraModules are the targets' Hugging Face module names inside a layer.
var loraModules = [nTargets]string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
	"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}

// LoRAModule is target's module name in a layer (q: "q_proj", gate:
// "gate_proj"), as PEFT's target_modules name it; "" for an unknown one.
func LoRAModule(target string) string {
	t := slices.Index(LoRATargets, target)
	if t < 0 {
		return ""
	}
	_, name, _ := strings.Cut(loraModules[t], ".")
	return name
}

// targetDims are target t's (in, out) sizes.
func (d dims) targetDims(t loraTarget) (in, out int) {
	switch t {
	case tQ:
		return d.C, d.Hq
	case tK, tV:
		return d.C, d.Hk
	case tO:
		return d.Hq, d.C
	case tGate, tUp:
		return d.C, d.F
	}
	return d.F, d.C
}

// ParseLoRATargets reads a comma-separated list of targets ("all" for
// every one), in LoRATargets order.
func ParseLoRATargets(s string) ([]string, error) {
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(LoRATargets), nil
	}
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(LoRATargets, f) {
			return nil, fmt.Errorf("LoRA target %q (want a comma-separated list of %s, or all)", f, strings.Join(LoRATargets, ", "))
		}
		seen[f] = true
	}
	var out []string
	for _, t := range LoRATargets {
		if seen[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Validate checks c against a model of cfg.
func (c LoRAConfig) Validate(cfg Config) error {
	d := dimsOf(cfg)
	if len(c.Targets) == 0 {
		return errors.New("model: LoRA: no targets")
	}
	for i, name := range c.Targets {
		t := slices.Index(LoRATargets, name)
		if t < 0 {
			return fmt.Errorf("model: LoRA: target %q is not one of %s", name, strings.Join(LoRATargets, ", "))
		}
		if slices.Contains(c.Targets[:i], name) {
			return fmt.Errorf("model: LoRA: target %q twice", name)
		}
		if in, out := d.targetDims(loraTarget(t)); c.Rank > min(in, out) {
			return fmt.Errorf("model: LoRA: rank %d exceeds %s's smaller side %d: the adapter would not be low-rank", c.Rank, name, min(in, out))
		}
	}
	if c.Rank < 1 {
		return fmt.Errorf("model: LoRA: rank %d must be at least 1", c.Rank)
	}
	if !(c.Alpha > 0) || math.IsInf(c.Alpha, 0) {
		return fmt.Errorf("model: LoRA: alpha %v must be positive and finite", c.Alpha)
	}
	return nil
}

// adapter is one projection's A (r,in) and B (out,r): views of the
// adapter arena (or of its gradient), zero on projections without one.
type adapter struct{ a, b kernels.Tensor }

// loraState is a model's adapters.
type loraState struct {
	cfg    LoRAConfig
	scale  float32 // Alpha / Rank
	on     [nTargets]bool
	params []ParamInfo
	arena  kernels.Tensor
}

// loraLayout lists the adapters' parameters, layer by layer and target by
// target, A before B, under the names PEFT saves them with.
func loraLayout(cfg Config, c LoRAConfig, on [nTargets]bool) []ParamInfo {
	d := dimsOf(cfg)
	var ps []ParamInfo
	off := 0
	for l := 0; l < d.L; l++ {
		for t := range nTargets {
			if !on[t] {
				continue
			}
			in, out := d.targetDims(t)
			p := fmt.Sprintf("base_model.model.model.layers.%d.%s.", l, loraModules[t])
			ps = append(ps, ParamInfo{Name: p + "lora_A.weight", Shape: []int{c.Rank, in}, Offset: off, Len: c.Rank * in, Decay: true, kind: kindMatrix})
			off += c.Rank * in
			ps = append(ps, ParamInfo{Name: p + "lora_B.weight", Shape: []int{out, c.Rank}, Offset: off, Len: out * c.Rank, Decay: true, kind: kindBias})
			off += out * c.Rank
		}
	}
	return ps
}

// bindAdapters points every layer's adapters of w at arena.
func (s *loraState) bindAdapters(w *weights, arena kernels.Tensor) {
	i := 0
	for l := range w.layers {
		for t := range nTargets {
			if s.on[t] {
				a, b := s.params[i], s.params[i+1]
				w.layers[l].ad[t] = adapter{arena.View(a.Offset, a.Len), arena.View(b.Offset, b.Len)}
				i += 2
			}
		}
	}
}

// EnableLoRA freezes the model's weights and adds adapters of c, seeded:
// A uniform in ±1/√in (PEFT's Kaiming-uniform default), B zero; with
// c.BF16Base it then holds the frozen weights in bfloat16 (FreezeBF16).
// From then on training (NewTrainer) updates only the adapters, and
// TrainableValues are theirs. It must come before the model's first
// training step.
func (m *Model) EnableLoRA(c LoRAConfig, seed uint64) error {
	if m.lora != nil {
		return errors.New("model: LoRA is already enabled")
	}
	if !m.grad.IsZero() {
		return errors.New("model: LoRA must be enabled before the model trains")
	}
	if err := c.Validate(m.Config); err != nil {
		return err
	}
	if c.BF16Base {
		if err := m.canHoldBF16(); err != nil {
			return err
		}
	}
	s := &loraState{cfg: LoRAConfig{Rank: c.Rank, Alpha: c.Alpha, Targets: slices.Clone(c.Targets)}, scale: float32(c.Alpha / float64(c.Rank))}
	for _, name := range c.Targets {
		s.on[slices.Index(LoRATargets, name)] = true
	}
	s.params = loraLayout(m.Config, c, s.on)
	init := make([]float32, arenaLen(s.params))
	for _, p := range s.params {
		if p.kind != kindMatrix {
			continue
		}
		f := fnv.New64a()
		f.Write([]byte(p.Name))
		rng := rand.New(rand.NewPCG(seed, f.Sum64()))
		bound := 1 / math.Sqrt(float64(p.Shape[1]))
		for i := range init[p.Offset : p.Offset+p.Len] {
			init[p.Offset+i] = float32(bound * (2*rng.Float64() - 1))
		}
	}
	s.arena = m.be.Alloc(len(init))
	m.be.Load(s.arena, init)
	s.bindAdapters(&m.w, s.arena)
	m.lora = s
	m.act = nil // laid out without the adapters' activations
	m.version++
	if c.BF16Base {
		return m.FreezeBF16()
	}
	return nil
}

// LoRA returns the model's adapter configuration, or nil without adapters.
func (m *Model) LoRA() *LoRAConfig {
	if m.lora == nil {
		return nil
	}
	c := m.lora.cfg
	c.Targets, c.BF16Base = slices.Clone(c.Targets), m.frozen != nil
	return &c
}

// trainable is what training updates: the adapters under LoRA, else every
// parameter.
func (m *Model) trainable() ([]ParamInfo, kernels.Tensor) {
	if m.lora != nil {
		return m.lora.params, m.lora.arena
	}
	return m.params, m.arena
}

// TrainableParams lists what training updates (see Params for the
// fields): the adapters under LoRA, else every parameter.
func (m *Model) TrainableParams() []ParamInfo {
	ps, _ := m.trainable()
	out := make([]ParamInfo, len(ps))
	for i, p := range ps {
		p.Shape = slices.Clone(p.Shape)
		out[i] = p
	}
	return out
}

// TrainableValues returns a copy of what training updates: the adapters
// under LoRA, else the whole parameter arena (ParamValues).
func (m *Model) TrainableValues() []float32 {
	_, a := m.trainable()
	v := make([]float32, a.Len())
	m.be.Store(v, a)
	return v
}

// SetTrainableValues overwrites what TrainableValues returns.
func (m *Model) SetTrainableValues(v []float32) error {
	_, a := m.trainable()
	if len(v) != a.Len() {
		what := "parameters"
		if m.lora != nil {
			what = "LoRA adapters"
		}
		return fmt.Errorf("model: set %s: %d values for %d", what, len(v), a.Len())
	}
	m.be.Load(a, v)
	m.version++
	return nil
}

// WithAdapters returns a model that shares m's frozen weights (no copy)
// and has adapters of its own, equal to m's now: a reference policy for
// a KL penalty at the cost of the adapters only. m must have LoRA
// enabled (its weights are then frozen, so sharing them is safe).
func (m *Model) WithAdapters() (*Model, error) {
	if m.lora == nil {
		return nil, errors.New("model: WithAdapters needs LoRA")
	}
	o := &Model{Config: m.Config, be: m.be, d: m.d, params: m.params, index: m.index, arena: m.arena, frozen: m.frozen, version: 1}
	o.w = o.bindFloat()
	s := *m.lora
	s.arena = m.be.Alloc(m.lora.arena.Len())
	m.be.Copy(s.arena, m.lora.arena)
	s.bindAdapters(&o.w, s.arena)
	o.lora = &s
	return o, nil
}

// MergeLoRA returns a model without adapters whose weights are m's with
// each adapter folded in, W + (α/r)·B·A: what export writes. Computed in
// float64, so the merged model's one rounding per weight is the only
// difference from m's outputs.
func (m *Model) MergeLoRA() (*Model, error) {
	if m.lora == nil {
		return nil, errors.New("model: MergeLoRA needs LoRA")
	}
	o, err := New(m.Config, m.be, 0)
	if err != nil {
		return nil, err
	}
	v := m.ParamValues()
	ad := m.TrainableValues()
	s, r := float64(m.lora.scale), m.lora.cfg.Rank
	i := 0
	for l := 0; l < m.d.L; l++ {
		for t := range nTargets {
			if !m.lora.on[t] {
				continue
			}
			pa, pb := m.lora.params[i], m.lora.params[i+1]
			i += 2
			w, err := m.param(fmt.Sprintf("model.layers.%d.%s.weight", l, loraModules[t]))
			if err != nil {
				return nil, err
			}
			in, out := m.d.targetDims(t)
			A, B, W := ad[pa.Offset:pa.Offset+pa.Len], ad[pb.Offset:pb.Offset+pb.Len], v[w.Offset:w.Offset+w.Len]
			for o := 0; o < out; o++ {
				for j := 0; j < in; j++ {
					var acc float64
					for k := 0; k < r; k++ {
						acc += float64(B[o*r+k]) * float64(A[k*in+j])
					}
					W[o*in+j] = float32(float64(W[o*in+j]) + s*acc)
				}
			}
		}
	}
	return o, o.SetParamValues(v)
}

// adapt adds target t's adapter term to out (N,out): u = (α/r)·x·Aᵀ (N,r),
// kept in a.lu[t] for the backward pass (adaptTerm), then out += u·Bᵀ.
// Without an adapter on t it does nothing.
func (m *Model) adapt(a *layerActs, w *layerWeights, t loraTarget, out, x kernels.Tensor, N int) {
	u := m.adaptTerm(a, w, t, x, N)
	if u.IsZero() {
		return
	}
	_, outDim := m.d.targetDims(t)
	m.linearRows(out, u, w.ad[t].b, kernels.Tensor{}, kernels.Tensor{}, N, m.lora.cfg.Rank, outDim, true, rowChunk)
}

// adaptTerm sets and returns a.lu[t] = (α/r)·x·Aᵀ (N,r), or the zero
// tensor without an adapter on t.
func (m *Model) adaptTerm(a *layerActs, w *layerWeights, t loraTarget, x kernels.Tensor, N int) kernels.Tensor {
	ad := w.ad[t]
	if ad.a.IsZero() {
		return kernels.Tensor{}
	}
	in, _ := m.d.targetDims(t)
	r := m.lora.cfg.Rank
	u := a.lu[t].View(0, N*r)
	// In blocks of rowChunk rows always: a row's term then does not depend
	// on the batch, also beside packed weights (whose products are
	// row-invariant at any N, while these small ones are not).
	m.linearRows(u, x, ad.a, kernels.Tensor{}, kernels.Tensor{}, N, in, r, false, rowChunk)
	m.be.Scale(u, m.lora.scale)
	return u
}

// adaptBackward: dy (N,out) = ∂L/∂out of target t; adds ∂L/∂A and ∂L/∂B
// into g's adapter and the term's ∂L/∂x into dx (N,in).
func (m *Model) adaptBackward(a *layerActs, w, g *layerWeights, s *gradScratch, t loraTarget, dy, x, dx kernels.Tensor, N int) {
	ad := w.ad[t]
	if ad.a.IsZero() {
		return
	}
	be := m.be
	in, outDim := m.d.targetDims(t)
	r := m.lora.cfg.Rank
	u, du := a.lu[t].View(0, N*r), s.dlu.View(0, N*r)
	be.Gemm(kernels.TN, g.ad[t].b, dy, u, outDim, N, r, true)
	be.Gemm(kernels.NN, du, dy, ad.b, N, outDim, r, false)
	be.Scale(du, m.lora.scale)
	be.Gemm(kernels.TN, g.ad[t].a, du, x, r, N, in, true)
	be.Gemm(kernels.NN, dx, du, ad.a, N, r, in, true)
}

// takeLoRAActs carves a.lu for N rows with take (nothing without LoRA).
func (m *Model) takeLoRAActs(a *layerActs, N int, take func(int) kernels.Tensor) {
	if m.lora == nil {
		return
	}
	for t := range nTargets {
		if m.lora.on[t] {
			a.lu[t] = take(N * m.lora.cfg.Rank)
		}
	}
}
