package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const lichessSample = "../../data/chess/testdata/lichess_sample.csv"

func TestChessDataUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"data", "check", "--domain", "math", "--file", "x.jsonl", "--format", "gsm8k", "--themes", "mateIn1"},
		{"data", "generate", "--domain", "math", "--kind", "ladder"},
		{"data", "generate", "--domain", "math", "--sizes", "1,1,1,1"},
		{"data", "generate", "--domain", "chess", "--kind", "openings"},
		{"data", "generate", "--domain", "chess", "--sizes", "1,1,1"},
		{"data", "generate", "--domain", "chess", "--kind", "mates", "--sizes", "1,-1,1,1"},
		{"eval", "--domain", "chess", "--harness", "h0", "--data", "x.jsonl", "--format", "gsm8k", "--themes", "mateIn1"},
	} {
		_, err := runWhale(t, args...)
		if err == nil || !isUsage(err) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}

// --themes keeps the puzzles with one of the themes and says how many
// carry each on stderr.
func TestDataCheckThemes(t *testing.T) {
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"data", "check", "--domain", "chess", "--file", lichessSample, "--format", "lichess", "--skip-bad", "--split", "all", "--themes", "mateIn1,fork"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errb.String(), "themes: mateIn1 1, fork 1 (2 puzzles kept)") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	if !strings.Contains(out.String(), "tasks: 2\n") || !strings.Contains(out.String(), "gold reward mean: 1.0000") {
		t.Errorf("stdout:\n%s", out.String())
	}
}

// Sets of both kinds written by data generate read back and replay; the
// ladder (the default kind) carries hanging pieces, the mates none.
func TestDataGenerateKinds(t *testing.T) {
	for _, kind := range []string{"", "ladder", "mates"} {
		dir := filepath.Join(t.TempDir(), "set")
		args := []string{"data", "generate", "--domain", "chess", "--sizes", "3,1,1,3", "--seed", "5", "--out", dir}
		if kind != "" {
			args = append(args, "--kind", kind)
		}
		if _, err := runWhale(t, args...); err != nil {
			t.Fatal(err)
		}
		out, err := runWhale(t, "data", "check", "--file", dir, "--format", "splits", "--split", "all")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "tasks: 8\n") || !strings.Contains(out, "gold reward mean: 1.0000") {
			t.Errorf("kind %q: check of the set:\n%s", kind, out)
		}
		train, err := os.ReadFile(filepath.Join(dir, "train.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if hanging := strings.Contains(string(train), "hangingPiece"); hanging != (kind != "mates") {
			t.Errorf("kind %q: hanging pieces in train %v", kind, hanging)
		}
	}
}
