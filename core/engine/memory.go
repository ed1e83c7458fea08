package engine

import (
	"os"
	"runtime/debug"
	"sync"
)

// presetMemory is each preset's share of the process's soft memory limit
// (runtime/debug.SetMemoryLimit) for one running engine, beside what
// grows with its model and the sequences it decodes (MemoryLimit):
// rollouts and their trajectories, the store's buffers, and the garbage
// collector's headroom. The terms are calibrated on the bench model
// (docs/PERFORMANCE.md), where the KV term, counted high, also covers the
// sampler's prefix cache and pool and a weight step's activations, which
// take turns with the running sequences' caches. Without a limit the collector lets the heap
// grow to twice what is live (GOGC=100), which is most of a small run's
// peak resident memory; under it the collector runs sooner instead. It
// is a soft limit: a run that needs more gets it, at the cost of more
// frequent collections, never an out-of-memory error; a share below what
// is live makes the collector run without pause, so every term errs
// high.
//
//	tiny    80 MiB
//	small   32 MiB  (on the bench model 566 MiB in all: one engine's peak RSS < 700 MB; docs/PERFORMANCE.md)
//	paper    8 GiB
//
// small's was 80 MiB while the prefix cache could hold 128 MiB; at 64 MiB
// (model.DefaultPrefixCacheBytes) the live heap's peak fell by more than
// the share did.
var presetMemory = map[string]int64{"tiny": 80 << 20, "small": 32 << 20, "paper": 8 << 30}

// modelCopies is how many float32 copies of its parameters a run holds:
// the weights, their gradients, AdamW's two moments, the sampler's packed
// copy and the operator's reference (or the starting weights a phase
// keeps).
const modelCopies = 6

// promptAllowance is the prompt positions a sequence's KV cache is
// counted for beside its MaxNewTokens: the built-in harnesses' prompts in
// the byte tokenizer run to about a thousand (a BPE tokenizer's are
// shorter, and a share too high only binds later).
const promptAllowance = 1024

// MemoryLimit is one run's share of the process's soft memory limit
// under cfg: its preset's (presetMemory), modelCopies float32 copies of
// its model's parameters, and the KV caches of SampleWidth sequences of
// promptAllowance + MaxNewTokens positions; 0 (no limit) for a
// configuration without a preset or a model.
func MemoryLimit(cfg Config) int64 {
	base, ok := presetMemory[cfg.Preset]
	if !ok || cfg.Model == nil {
		return 0
	}
	m := cfg.Model
	kvPerPosition := int64(2*m.NumHiddenLayers*m.NumKeyValueHeads*m.Dim()) * 4
	return base + modelCopies*4*int64(m.NumParams()) + SampleWidth*int64(promptAllowance+cfg.MaxNewTokens)*kvPerPosition
}

// memoryLimit holds the process's soft memory limit while runs run: the
// sum of the running engines' shares (two bench workers, two shares),
// and the limit the process had before once none runs.
var memoryLimit struct {
	sync.Mutex
	held, before int64
}

// holdMemoryLimit adds share to the process's soft memory limit while
// the caller runs and returns the func that takes it back. A limit the
// person set (GOMEMLIMIT) wins: then, and for a share ≤ 0, it changes
// nothing.
func holdMemoryLimit(share int64) (release func()) {
	if share <= 0 || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	m := &memoryLimit
	m.Lock()
	defer m.Unlock()
	if m.held == 0 {
		m.before = debug.SetMemoryLimit(-1)
	}
	m.held += share
	debug.SetMemoryLimit(m.held)
	var once sync.Once
	return func() {
		once.Do(func() {
			m.Lock()
			defer m.Unlock()
			m.held -= share
			if m.held == 0 {
				debug.SetMemoryLimit(m.before)
			} else {
				debug.SetMemoryLimit(m.held)
			}
		})
	}
}
