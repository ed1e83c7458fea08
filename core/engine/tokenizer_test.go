package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"whale/core/bundle"
	"whale/core/tokenizer"
	"whale/kernels"
)

// TestRunKeepsItsTokenizer: a run started with a tokenizer file stores it,
// resumes with it (and refuses another), pins it in its checkpoints, and
// exports it; its generation_config eos ids stay stops after resume.
func TestRunKeepsItsTokenizer(t *testing.T) {
	cfg := tinyConfig(t)
	db := openDB(t)
	// Not byte for byte the byte tokenizer's file, so it travels as a file.
	tj := append(tokenizer.BytesJSON(), '\n')
	tok, err := tokenizer.Parse(tj)
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, db)
	m := env.Bundle.Model
	if _, err := bundle.New(m, tok, nil, bundle.Generation{}, "bad"); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Fatalf("a tokenizer without its file: error %v", err)
	}
	if env.Bundle, err = bundle.New(m, tok, tj, bundle.Generation{EOS: []int32{tokenizer.BytesEndOfText}}, "tok"); err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, env, "tok")
	if err != nil {
		t.Fatal(err)
	}
	if e.Cfg.Tokenizer != tokenizerHash(tj) {
		t.Fatalf("recorded tokenizer %q, want the file's sha256", e.Cfg.Tokenizer)
	}
	saves := 0
	e.stopAfter = func(State) bool { saves++; return saves == 3 }
	if _, err := e.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatal(err)
	}

	other := testEnv(t, db)
	if _, err := Resume(other, kernels.NewCPU(), "tok"); err == nil || !strings.Contains(err.Error(), "byte tokenizer") {
		t.Fatalf("resume with the byte tokenizer: error %v, want one naming both tokenizers", err)
	}
	again := testEnv(t, db)
	again.Bundle = nil
	r, err := Resume(again, kernels.NewCPU(), "tok")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.tmpl.Tokenizer().(*tokenizer.BPE); !ok {
		t.Fatalf("resumed with %T, want the stored tokenizer.json", r.tmpl.Tokenizer())
	}
	if !slices.Contains(r.tmpl.Stops(), tokenizer.BytesEndOfText) {
		t.Fatalf("resumed stops %v lack the recorded eos id", r.tmpl.Stops())
	}
	sum, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.GetCheckpoint(sum.BestCkpt)
	if err != nil || !slices.Contains(c.Blobs, tokenizerHash(tj)) {
		t.Fatalf("checkpoint %s pins %v (%v), want its tokenizer among them", sum.BestCkpt, c.Blobs, err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if _, err := ExportCheckpoint(db, sum.BestCkpt, dir, "F32", ExportHF, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, bundle.TokenizerFile)); err != nil || !bytes.Equal(got, tj) {
		t.Fatalf("exported tokenizer.json differs from the run's (%v)", err)
	}
	b, err := bundle.LoadDir(dir, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if b.TokenizerHash() != tokenizerHash(tj) || !slices.Contains(b.Template.Stops(), tokenizer.BytesEndOfText) {
		t.Fatalf("exported folder reads back with tokenizer %s and stops %v", b.TokenizerHash(), b.Template.Stops())
	}
}
