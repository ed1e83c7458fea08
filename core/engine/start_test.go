package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/ckpt"
	"whale/internal/longtests"
	"whale/kernels"
)

// A run recorded but stopped before its first resume point (a full disk,
// a kill) resumes with no model given: from the file it recorded — to
// exactly the uninterrupted run — or, when the file moved, from the file
// named anew, whose sha256 must be the recorded one.
func TestResumeBeforeFirstResumePointFromRecordedStart(t *testing.T) {
	longtests.SkipShort(t, "three tiny runs (core/store's failing-write test resumes from a recorded start file too)")
	cfg := tinyConfig(t)
	sumA, _, _ := runFresh(t, cfg, "s")

	db := openDB(t)
	env := testEnv(t, db)
	file := filepath.Join(t.TempDir(), "start.safetensors")
	if err := ckpt.SaveModel(file, env.Bundle.Model, ckpt.F32, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	rec := cfg
	mc := env.Bundle.Model.Config
	rec.Model = &mc
	rec.Start = &StartModel{Kind: StartFile, Name: file, SHA256: hex.EncodeToString(sum[:])}
	if err := db.CreateRun("s", mustJSON(rec), time.Now()); err != nil {
		t.Fatal(err)
	}

	// Moved: the recorded path is gone, a wrong file is refused.
	moved := file + ".moved"
	if err := os.Rename(file, moved); err != nil {
		t.Fatal(err)
	}
	bare := env
	bare.Bundle = nil
	if _, err := Resume(bare, kernels.NewCPU(), "s"); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Fatalf("resume with the start file moved: %v, want advice to name it with --model", err)
	}
	other := filepath.Join(t.TempDir(), "other.safetensors")
	if err := os.WriteFile(other, append(b[:len(b):len(b)], 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := StartingModel(db, *rec.Start, kernels.NewCPU(), other); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("a start file with another sha256: %v", err)
	}
	m, err := StartingModel(db, *rec.Start, kernels.NewCPU(), moved)
	if err != nil {
		t.Fatal(err)
	}
	withMoved := bare
	withMoved.Bundle = byteBundle(t, m)
	resumeMatches(t, withMoved, "s", sumA, "run without a resume point, start file moved and named")

	// In place: no model given at all.
	if err := os.Rename(moved, file); err != nil {
		t.Fatal(err)
	}
	db2 := openDB(t)
	if err := db2.CreateRun("s", mustJSON(rec), time.Now()); err != nil {
		t.Fatal(err)
	}
	bare.Store = db2
	resumeMatches(t, bare, "s", sumA, "run without a resume point, start file recorded")
}
