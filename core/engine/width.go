package engine

// SampleWidth is how many sequences a run's local model decodes at once
// (model.SamplerOptions.MaxBatch) in training, harness scoring and
// evaluation alike. A weight step has P × G rollouts (small: 32), so the
// width tells on harness scoring (128 val tasks a score) and evaluation
// (val 128 × 2 at a boundary, the final test 256 × 8). Measured on the
// bench model (docs/PERFORMANCE.md, "Evaluation batch width": whale eval
// of 64 math val tasks × 8 at widths 16 … 256), the CPU time per episode
// fell with the width, 59, 59, 52, 45 and 37 s for 16, 32, 64, 128 and
// 256, while the live heap stayed near 310 MB at 64 and 128; 128 takes
// most of that gain within one engine's memory bound (presetMemory). On
// the CPU backend decoding is exact, so the width changes how fast a run
// goes, never what it samples.
const SampleWidth = 128
