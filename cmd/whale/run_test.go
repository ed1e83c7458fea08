package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/core/store"
	"whale/internal/longtests"
)

func TestRunsShowMisuse(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "w.db")
	if _, err := runWhale(t, "runs", "--db", missing, "--json"); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("runs of a missing workspace: %v, want an error naming it", err)
	}
	db := emptyWorkspace(t)
	out, err := runWhale(t, "runs", "--db", db, "--json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Fatalf("runs of an empty workspace: %q, %v", out, err)
	}
	if _, err := runWhale(t, "show", "nope", "--db", db); err == nil || isUsage(err) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("show of a missing run: %v (want a plain error naming it)", err)
	}
	if _, err := runWhale(t, "run", "--domain", "math", "--db", db); !isUsage(err) {
		t.Fatalf("run without --headless: %v, want a usage error", err)
	}
	if _, err := runWhale(t, "run", "--headless", "--db", db); !isUsage(err) {
		t.Fatalf("run without --domain: %v, want a usage error", err)
	}
	if _, err := runWhale(t, "run", "--headless", "--domain", "math", "--weights", "ppo", "--db", db); !isUsage(err) || !strings.Contains(err.Error(), "operator") {
		t.Fatalf("--weights ppo: %v, want a usage error naming the field", err)
	}
	if _, err := runWhale(t, "run", "--headless", "--domain", "math", "--condition", "harness-only", "--sample-bf16",
		"--policy-url", "http://127.0.0.1:1/v1", "--policy-model", "m", "--db", db); !isUsage(err) || !strings.Contains(err.Error(), "sample_bf16") {
		t.Fatalf("--sample-bf16 with a server policy: %v, want a usage error naming the field", err)
	}
	if _, err := runWhale(t, "show", "--db", db); !isUsage(err) {
		t.Fatalf("show without RUN: %v, want a usage error", err)
	}
}

// TestRunTinyThenResumeFinished drives the real wiring with the embedded
// model: a tiny run to its end, then show and resume of the finished run.
func TestRunTinyThenResumeFinished(t *testing.T) {
	longtests.Skip(t, "a tiny run takes about a minute")
	db := filepath.Join(t.TempDir(), "w.db")
	out, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		RunID  string `json:"run_id"`
		Rounds int    `json:"rounds"`
		Phases []struct {
			Kind string `json:"kind"`
		} `json:"phases"`
	}
	lastJSONLine(t, out, &sum)
	if sum.Rounds != 2 || len(sum.Phases) != 4 {
		t.Fatalf("tiny run summary: %+v", sum)
	}
	out, err = runWhale(t, "show", sum.RunID, "--db", db, "--json")
	var show struct {
		Status    string  `json:"status"`
		Resumable bool    `json:"resumable"`
		ComputeS  float64 `json:"compute_s"`
	}
	lastJSONLine(t, out, &show)
	if err != nil || show.Status != "finished" || show.Resumable || show.ComputeS <= 0 {
		t.Fatalf("show: %+v, %v", show, err)
	}
	again, err := runWhale(t, "resume", sum.RunID, "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum2 struct {
		RunID string `json:"run_id"`
	}
	lastJSONLine(t, again, &sum2)
	if sum2.RunID != sum.RunID {
		t.Fatalf("resume of a finished run printed %q", again)
	}
}

// emptyWorkspace creates a workspace with no runs: read-only commands
// refuse a path that names none.
func emptyWorkspace(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "w.db")
	s, err := store.Open(db, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return db
}

func TestGCMisuseAndEmpty(t *testing.T) {
	db := emptyWorkspace(t)
	if _, err := runWhale(t, "gc", "--db", db, "--keep", "-1"); !isUsage(err) {
		t.Fatalf("--keep -1: %v, want a usage error", err)
	}
	out, err := runWhale(t, "gc", "--db", db, "--json")
	var r struct {
		Blobs int `json:"blobs_deleted"`
	}
	lastJSONLine(t, out, &r)
	if err != nil || r.Blobs != 0 {
		t.Fatalf("gc of an empty workspace: %q, %v", out, err)
	}
}

func TestExportMisuse(t *testing.T) {
	db := emptyWorkspace(t)
	if _, err := runWhale(t, "export", "r/01-weights", "--db", db); !isUsage(err) {
		t.Fatalf("export without --out: %v, want a usage error", err)
	}
	if _, err := runWhale(t, "export", "r/01-weights", "--out", t.TempDir(), "--dtype", "f8", "--db", db); !isUsage(err) {
		t.Fatalf("--dtype f8: %v, want a usage error", err)
	}
	if _, err := runWhale(t, "export", "r/01-weights", "--out", t.TempDir(), "--db", db); err == nil || isUsage(err) || !strings.Contains(err.Error(), "r/01-weights") {
		t.Fatalf("missing checkpoint: %v, want an error naming it", err)
	}
	if _, err := runWhale(t, "export", "r/01-weights", "--out", t.TempDir(), "--format", "onnx", "--db", db); !isUsage(err) || !strings.Contains(err.Error(), "whale, hf, gguf") {
		t.Fatalf("--format onnx: %v, want a usage error naming the formats", err)
	}
}
