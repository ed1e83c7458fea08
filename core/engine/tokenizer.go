package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"whale/core/bundle"
	"whale/core/tokenizer"
)

// tokenizerHash is what Config.Tokenizer records of a tokenizer file:
// its sha256, or "" for none (the byte tokenizer).
func tokenizerHash(tokJSON []byte) string {
	if tokJSON == nil {
		return ""
	}
	s := sha256.Sum256(tokJSON)
	return hex.EncodeToString(s[:])
}

// runTokenizer is the tokenizer a run renders with: the one it recorded
// (Config.Tokenizer) — its bundle's, when the environment brings the
// bundle the run was made with, else read back from the store (resume,
// fork). A bundle with another tokenizer is refused: its model was not
// trained on the run's token ids.
func runTokenizer(env Env, cfg Config, runID string) (tokenizer.Tokenizer, error) {
	if b := env.Bundle; b != nil {
		if h := tokenizerHash(b.TokenizerJSON); h != cfg.Tokenizer {
			return nil, fmt.Errorf("engine: run %s renders with tokenizer %s, but the environment's is %s", runID, tokenizerName(cfg.Tokenizer), tokenizerName(h))
		}
		return b.Tokenizer, nil
	}
	if cfg.Tokenizer == "" {
		return tokenizer.NewBytes(), nil
	}
	b, err := env.Store.GetBlob(cfg.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("engine: run %s: its tokenizer.json (blob %s): %w", runID, ShortHash(cfg.Tokenizer), err)
	}
	tok, err := tokenizer.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("engine: run %s: its tokenizer.json (blob %s): %w", runID, ShortHash(cfg.Tokenizer), err)
	}
	return tok, nil
}

// tokenizerName names a recorded tokenizer in messages.
func tokenizerName(hash string) string {
	if hash == "" {
		return "the byte tokenizer"
	}
	return "tokenizer.json sha256 " + ShortHash(hash)
}

// generationOf is what Config.Generation records of b's generation
// settings: nil for none.
func generationOf(b *bundle.Bundle) *bundle.Generation {
	if b.Generation.IsZero() {
		return nil
	}
	g := b.Generation
	return &g
}
