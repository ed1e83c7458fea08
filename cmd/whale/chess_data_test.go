package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

const lichessSample = "../../data/chess/testdata/lichess_sample.csv"

func TestChessDataUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"data", "check", "--domain", "math", "--file", "x.jsonl", "--format", "gsm8k", "--themes", "mateIn1"},
		{"data", "generate", "--domain", "math", "--ladder"},
		{"data", "generate", "--domain", "chess", "--sizes", "1,1,1,1"},
		{"data", "generate", "--domain", "chess", "--ladder", "--sizes", "1,1,1"},
		{"data", "generate", "--domain", "chess", "--ladder", "--sizes", "1,-1,1,1"},
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

// A ladder set written by data generate reads back and replays.
func TestDataGenerateLadder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ladder")
	if _, err := runWhale(t, "data", "generate", "--domain", "chess", "--ladder", "--sizes", "3,1,1,2", "--seed", "5", "--out", dir); err != nil {
		t.Fatal(err)
	}
	out, err := runWhale(t, "data", "check", "--file", dir, "--format", "splits", "--split", "all")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "tasks: 7\n") || !strings.Contains(out, "gold reward mean: 1.0000") {
		t.Errorf("check of the ladder set:\n%s", out)
	}
}
