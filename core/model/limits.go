package model

import "fmt"

// The largest sizes a configuration may state. A config.json comes from
// outside whale and sizes every allocation of a model, so each size is
// bounded before anything is allocated: the bounds are far beyond any
// model whale's float32 engine can hold (Qwen3-0.6B: vocab 151,936,
// hidden 1,024, 28 layers), and close enough that a typo or a hostile
// file fails with a sentence instead of Go's fatal out of memory.
const (
	MaxVocabSize    = 1 << 22 // 4,194,304 token ids
	MaxHiddenSize   = 1 << 16
	MaxIntermediate = 1 << 18
	MaxLayers       = 1 << 10
	MaxHeads        = 1 << 10 // attention heads, and key/value heads
	MaxHeadDim      = 1 << 12
	MaxPositions    = 1 << 24
	// MaxParams bounds the parameter count: 2^34 float32 values are 64 GiB.
	MaxParams = 1 << 34
)

// checkMaxima refuses sizes past the stated maxima, naming the field.
func (c Config) checkMaxima() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{{"vocab_size", c.VocabSize, MaxVocabSize}, {"hidden_size", c.HiddenSize, MaxHiddenSize},
		{"intermediate_size", c.IntermediateSize, MaxIntermediate}, {"num_hidden_layers", c.NumHiddenLayers, MaxLayers},
		{"num_attention_heads", c.NumAttentionHeads, MaxHeads}, {"num_key_value_heads", c.NumKeyValueHeads, MaxHeads},
		{"head_dim", c.HeadDim, MaxHeadDim}, {"max_position_embeddings", c.MaxPositionEmbeddings, MaxPositions}} {
		if f.v > f.max {
			return fmt.Errorf("model: config field %s: %d is over the largest whale accepts (%d)", f.name, f.v, f.max)
		}
	}
	if n := int64(c.NumParams()); n > MaxParams {
		return fmt.Errorf("model: config: %d parameters (from vocab_size, hidden_size, intermediate_size and num_hidden_layers) are over the largest whale accepts (%d, 64 GiB of float32)", n, int64(MaxParams))
	}
	return nil
}

// Layout lists the parameters a model of c has (names, HF shapes, arena
// offsets) without allocating them: a loader checks a file's tensors
// against it before sizing the model. c must be valid (Validate).
func (c Config) Layout() []ParamInfo { return paramLayout(c) }
