// Package modeltest is the tests' model: one tiny Qwen3-shaped
// configuration (a run of the tiny preset on it takes about a second)
// that the engine's, the store's, the chat's, the bench's and the
// command's tests share, so that a change to the model's configuration is
// made once.
//
// It is imported by tests only and must never be imported by production
// code.
package modeltest

import (
	"testing"

	"whale/core/model"
	"whale/kernels"
)

// Config is the test model: a padded byte vocabulary (264 ids, room for
// the byte tokenizer's 259), one layer, two query heads over one KV head,
// tied embeddings. Each call returns a fresh value, so a test that
// changes its copy changes no other test's.
func Config() model.Config {
	return model.Config{ModelType: "qwen3", VocabSize: 264, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 10000,
		MaxPositionEmbeddings: 4096, TieWordEmbeddings: true, HiddenAct: "silu"}
}

// New returns the test model with random weights drawn from seed on the
// CPU backend, failing t if it cannot be built.
func New(t testing.TB, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(Config(), kernels.NewCPU(), seed)
	if err != nil {
		t.Fatalf("modeltest: %v", err)
	}
	return m
}
