package engine

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
