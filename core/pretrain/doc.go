// Package pretrain builds whale's base model from nothing: a corpus of
// demonstrations written by a scripted demonstrator through the built-in
// harnesses and variants of their SEARCH_SPACE on the domains' train
// splits, and a deterministic, resumable training loop over it.
//
// The mixture of the corpus (which harness layouts the demonstrations use,
// how often the demonstrator slips) is what makes the base model mediocre
// in the intended way; docs/BASE_MODEL.md records it with the calibration
// it produced.
//
// The package must never read a val, audit or test split: only
// data.SplitTrain feeds the corpus.
package pretrain
