package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestPretrainTinyResumes(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.safetensors")
	args := []string{"pretrain", "--preset", "tiny", "--steps", "4", "--batch", "2", "--tasks", "4", "--checkpoint-every", "2", "--json"}
	out, err := runWhale(t, append(args, "--out", a)...)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Steps      int    `json:"steps"`
		Done       bool   `json:"done"`
		CorpusHash string `json:"corpus_hash"`
	}
	lastJSONLine(t, out, &rep)
	if rep.Steps != 4 || !rep.Done || len(rep.CorpusHash) != 64 {
		t.Fatalf("report %+v", rep)
	}
	// --resume on a finished run's resume point does no further steps and
	// rewrites the same bytes.
	before, _ := os.ReadFile(a)
	if _, err := runWhale(t, append(args, "--out", a, "--resume")...); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(a)
	if !bytes.Equal(before, after) {
		t.Fatal("resuming a finished run changed the model")
	}
	// The eval command reads what pretrain wrote.
	out, err = runWhale(t, "eval", "--domain", "chess", "--harness", "h0", "--n", "2", "--max-new-tokens", "8", "--model", a, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ev evalReport
	lastJSONLine(t, out, &ev)
	if ev.Rollouts != 2 || ev.Model != a || len(ev.ModelHash) != 64 {
		t.Fatalf("eval of the pretrained file: %+v", ev)
	}
}

func TestPretrainMisuse(t *testing.T) {
	for _, args := range [][]string{
		{"pretrain"},
		{"pretrain", "--out", "x", "--preset", "huge"},
		{"pretrain", "--out", "x", "--steps", "0"},
	} {
		_, err := runWhale(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
}
