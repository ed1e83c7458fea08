package model

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"whale/kernels"
)

// ParamInfo describes one parameter tensor inside the parameter arena.
type ParamInfo struct {
	// Name is the HF tensor name, e.g. "model.layers.0.self_attn.q_proj.weight".
	Name string
	// Shape is the HF shape: [out, in] for linear weights, [n] for vectors.
	Shape []int
	// Offset and Len locate the tensor in the arena, in elements.
	Offset, Len int
	// Decay says whether AdamW applies weight decay (matrices yes; norms
	// and biases no).
	Decay bool
	// kind guides initialisation.
	kind paramKind
}

type paramKind int

const (
	kindMatrix   paramKind = iota // normal(0, 0.02)
	kindResidual                  // normal(0, 0.02/sqrt(2·layers)): o_proj, down_proj
	kindNorm                      // ones
	kindBias                      // zeros
)

// layerWeights are views of one decoder layer's parameters (or of their
// gradients, or of a bfloat16 copy) inside an arena.
type layerWeights struct {
	inNorm, postNorm  kernels.Tensor // (C)
	wq, wk, wv, wo    kernels.Tensor // (Hq,C) (Hk,C) (Hk,C) (C,Hq)
	bq, bk, bv        kernels.Tensor // (Hq) (Hk) (Hk), zero without attention_bias
	qNorm, kNorm      kernels.Tensor // (hd), zero without qk-norm
	wGate, wUp, wDown kernels.Tensor // (F,C) (F,C) (C,F)
	// wqkv and wGateUp view the adjacent q, k, v (and gate, up) weights as
	// one matrix ((Hq+2Hk),C) and (2F,C), for single-row products.
	wqkv, wGateUp kernels.Tensor
	// ad are the LoRA adapters (zero without one on that projection).
	ad [nTargets]adapter
}

// weights are views of every parameter inside an arena.
type weights struct {
	embed  kernels.Tensor // (V,C)
	norm   kernels.Tensor // (C)
	lmHead kernels.Tensor // (V,C); the embedding when tied
	layers []layerWeights
}

// paramLayout lists the parameters of cfg in arena order. Within a layer
// q, k, v are adjacent (as are gate and up) so they form one [out, in]
// matrix a fused projection could use.
func paramLayout(cfg Config) []ParamInfo {
	C, F, V := cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize
	hd := cfg.Dim()
	Hq, Hk := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd
	var ps []ParamInfo
	off := 0
	add := func(name string, k paramKind, shape ...int) {
		n := 1
		for _, s := range shape {
			n *= s
		}
		ps = append(ps, ParamInfo{Name: name, Shape: shape, Offset: off, Len: n, Decay: k == kindMatrix || k == kindResidual, kind: k})
		off += n
	}
	add("model.embed_tokens.weight", kindMatrix, V, C)
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", kindNorm, C)
		add(p+"self_attn.q_proj.weight", kindMatrix, Hq, C)
		add(p+"self_attn.k_proj.weight", kindMatrix, Hk, C)
		add(p+"self_attn.v_proj.weight", kindMatrix, Hk, C)
		if cfg.AttentionBias {
			add(p+"self_attn.q_proj.bias", kindBias, Hq)
			add(p+"self_attn.k_proj.bias", kindBias, Hk)
			add(p+"self_attn.v_proj.bias", kindBias, Hk)
		}
		if cfg.QKNorm() {
			add(p+"self_attn.q_norm.weight", kindNorm, hd)
			add(p+"self_attn.k_norm.weight", kindNorm, hd)
		}
		add(p+"self_attn.o_proj.weight", kindResidual, C, Hq)
		add(p+"post_attention_layernorm.weight", kindNorm, C)
		add(p+"mlp.gate_proj.weight", kindMatrix, F, C)
		add(p+"mlp.up_proj.weight", kindMatrix, F, C)
		add(p+"mlp.down_proj.weight", kindResidual, C, F)
	}
	add("model.norm.weight", kindNorm, C)
	if !cfg.TieWordEmbeddings {
		add("lm_head.weight", kindMatrix, V, C)
	}
	return ps
}

func arenaLen(ps []ParamInfo) int {
	last := ps[len(ps)-1]
	return last.Offset + last.Len
}

// bind returns views of every parameter of cfg inside arena (parameters,
// gradients or a bfloat16 copy: all share one layout).
func bind(cfg Config, ps []ParamInfo, arena kernels.Tensor) weights {
	v := map[string]kernels.Tensor{}
	off := map[string]int{}
	for _, p := range ps {
		v[p.Name] = arena.View(p.Offset, p.Len)
		off[p.Name] = p.Offset
	}
	span := func(first, last string) kernels.Tensor {
		if _, ok := off[first]; !ok {
			return kernels.Tensor{} // not in ps (a bfloat16 base's float views)
		}
		end := off[last] + v[last].Len()
		return arena.View(off[first], end-off[first])
	}
	w := weights{embed: v["model.embed_tokens.weight"], norm: v["model.norm.weight"], lmHead: v["lm_head.weight"]}
	if cfg.TieWordEmbeddings {
		w.lmHead = w.embed
	}
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		w.layers = append(w.layers, layerWeights{
			inNorm: v[p+"input_layernorm.weight"], postNorm: v[p+"post_attention_layernorm.weight"],
			wq: v[p+"self_attn.q_proj.weight"], wk: v[p+"self_attn.k_proj.weight"],
			wv: v[p+"self_attn.v_proj.weight"], wo: v[p+"self_attn.o_proj.weight"],
			bq: v[p+"self_attn.q_proj.bias"], bk: v[p+"self_attn.k_proj.bias"], bv: v[p+"self_attn.v_proj.bias"],
			qNorm: v[p+"self_attn.q_norm.weight"], kNorm: v[p+"self_attn.k_norm.weight"],
			wGate: v[p+"mlp.gate_proj.weight"], wUp: v[p+"mlp.up_proj.weight"], wDown: v[p+"mlp.down_proj.weight"],
			wqkv:    span(p+"self_attn.q_proj.weight", p+"self_attn.v_proj.weight"),
			wGateUp: span(p+"mlp.gate_proj.weight", p+"mlp.up_proj.weight"),
		})
	}
	return w
}

// initParams returns seeded initial values for the whole arena. Each
// tensor draws from its own stream seeded by (seed, name), so its values do
// not depend on which other tensors exist.
func initParams(cfg Config, ps []ParamInfo, seed uint64) []float32 {
	h := make([]float32, arenaLen(ps))
	resid := 0.02 / math.Sqrt(2*float64(cfg.NumHiddenLayers))
	for _, p := range ps {
		dst := h[p.Offset : p.Offset+p.Len]
		switch p.kind {
		case kindNorm:
			for i := range dst {
				dst[i] = 1
			}
		case kindBias:
		case kindMatrix, kindResidual:
			std := 0.02
			if p.kind == kindResidual {
				std = resid
			}
			f := fnv.New64a()
			f.Write([]byte(p.Name))
			rng := rand.New(rand.NewPCG(seed, f.Sum64()))
			for i := range dst {
				dst[i] = float32(std * rng.NormFloat64())
			}
		}
	}
	return h
}

// NumParams returns the number of parameters of cfg (a tied head counted
// once).
func (c Config) NumParams() int { return arenaLen(paramLayout(c)) }
