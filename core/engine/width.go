package engine

// SampleWidth is how many sequences a run's local model decodes at once
// (model.SamplerOptions.MaxBatch) in training, harness scoring and
// evaluation alike: the width at which the sampler's episodes per second
// peaked on the bench model (docs/PERFORMANCE.md, "Evaluation batch
// width"). On the CPU backend decoding is exact, so the width changes how
// fast a run goes, never what it samples.
const SampleWidth = 64
