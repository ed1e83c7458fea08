package engine

import (
	"whale/core/model"
	"whale/kernels"
)

// SampleWidth is how many sequences a run's local model decodes at once
// (model.SamplerOptions.MaxBatch) in training, harness scoring and
// evaluation alike. A weight step has P × G rollouts (small: 32), so the
// width tells on harness scoring (128 val tasks a score) and evaluation
// (val 128 × 2 at a boundary, the final test 256 × 8). Measured on the
// bench model (docs/PERFORMANCE.md, "Evaluation batch width"): whale
// eval of 64 math val tasks × 8, where a task's 8 samples share their
// prompt's cache, spent 59, 59, 52, 45 and 37 CPU seconds at widths 16,
// 32, 64, 128 and 256; but a run's val and scoring draw one sample a
// task, so each sequence holds its whole prompt's keys and values (~2 MB
// on the byte tokenizer's long prompts), and at 128 an engine's live
// heap rose past its memory share (presetMemory) and the collector ran
// without pause. 64 is the widest that fits it. On the CPU backend
// decoding is exact, so the width changes how fast a run goes, never
// what it samples.
const SampleWidth = 64

// minLaneWidth is the fewest sequences a lane decodes at once (lanes):
// narrower, a step's products are too short to pay for themselves (the
// widths measured above: 16 sequences cost 1.13× the CPU of 64).
const minLaneWidth = 16

// laneParams is the model size below which a run's local model decodes in
// lanes, on the CPU float32 backend (the one that packs weights, which its
// lanes share; a GPU backend keeps one stream). Measured on the embedded
// 4.5M-parameter model: its forward
// passes are tens of microseconds of products between host work (token
// drawing, the harnesses' code, the prefix cache's copies) that runs on
// one thread, so threads that share each product sit idle for much of a
// step; a lane a thread keeps every core on its own batch
// (docs/PERFORMANCE.md, "Issue 41: lanes"). Larger models keep one stream
// whose products split well over the threads, and one set of KV caches
// (not measured above the embedded model).
const laneParams = 32 << 20

// Lanes is how many streams a harness run decodes at once when m, the
// local model, samples it at width sequences in all
// (harnesses.RunOptions.Lanes, chat.Local.OpenLanes): on the CPU float32
// backend and below laneParams, one a kernel thread, each at least
// minLaneWidth wide; otherwise 1. The lanes change which thread decodes a
// sequence and when, never what it samples
// (TestLanesLeaveTheRunBitIdentical).
func Lanes(m *model.Model, width int) int {
	if _, cpu := m.Backend().(kernels.PackedNT); !cpu || m.Config.NumParams() >= laneParams {
		return 1
	}
	return max(1, min(kernels.Threads(), width/minLaneWidth))
}

// lanes is Lanes for the run's policy: 1 unless it is the local model.
func (e *Engine) lanes() int {
	if !e.laned {
		return 1
	}
	return Lanes(e.model, e.inFlight)
}
