package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"whale/core/bundle"
	"whale/core/store"
	"whale/core/tokenizer"
	"whale/data"
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

// runTokenizer is the tokenizer a run renders with: the environment's,
// which must be the one the run recorded, or when the environment has
// none (resume, fork), the recorded one read back from the store.
func runTokenizer(env Env, cfg Config, runID string) (tokenizer.Tokenizer, error) {
	if _, isBytes := env.Tokenizer.(tokenizer.Bytes); env.Tokenizer != nil && !isBytes && env.TokenizerJSON == nil {
		return nil, fmt.Errorf("engine: run %s: the environment's tokenizer comes without its tokenizer.json (Env.TokenizerJSON), which the run must store to resume with it", runID)
	}
	if env.Tokenizer != nil {
		if h := tokenizerHash(env.TokenizerJSON); h != cfg.Tokenizer {
			return nil, fmt.Errorf("engine: run %s renders with tokenizer %s, but the environment's is %s", runID, tokenizerName(cfg.Tokenizer), tokenizerName(h))
		}
		return env.Tokenizer, nil
	}
	if cfg.Tokenizer == "" {
		return tokenizer.NewBytes(), nil
	}
	b, err := env.TokenizerJSON, error(nil)
	if tokenizerHash(b) != cfg.Tokenizer {
		b, err = env.Store.GetBlob(cfg.Tokenizer)
	}
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

// BundleEnv is the environment of a run in dom on store db whose model,
// tokenizer and generation settings are b's.
func BundleEnv(b *bundle.Bundle, dom data.Domain, db *store.DB) Env {
	env := Env{Domain: dom, Model: b.Model, Tokenizer: b.Tokenizer, TokenizerJSON: b.TokenizerJSON, Store: db}
	if !b.Generation.IsZero() {
		g := b.Generation
		env.Generation = &g
	}
	return env
}
