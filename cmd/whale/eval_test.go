package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/basemodel"
)

func TestEvalOracleIsExact(t *testing.T) {
	for _, d := range []string{"math", "searchqa", "chess"} {
		out, err := runWhale(t, "eval", "--domain", d, "--harness", "h0", "--split", "test", "--k", "2", "--policy", "oracle", "--json")
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		var rep evalReport
		lastJSONLine(t, out, &rep)
		if rep.MeanAtK != 1 || rep.PassAtK != 1 || rep.CI95 != [2]float64{1, 1} || rep.K != 2 || rep.Rollouts != 2*rep.Tasks || rep.Tasks < 200 {
			t.Errorf("%s: oracle report %+v, want mean@2 = pass@2 = 1 over the whole test split", d, rep)
		}
		if len(rep.FailureKinds) != 0 {
			t.Errorf("%s: oracle failures %v", d, rep.FailureKinds)
		}
	}
}

func TestEvalRandomScoresNearZero(t *testing.T) {
	out, err := runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--split", "val", "--k", "2", "--n", "64", "--policy", "random", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep evalReport
	lastJSONLine(t, out, &rep)
	if rep.MeanAtK > 0.05 || rep.Rollouts != 128 {
		t.Fatalf("random policy report %+v", rep)
	}
	if rep.FailureKinds["format"]+rep.FailureKinds["truncated"]+rep.FailureKinds["wrong"]+rep.FailureKinds["invalid"] == 0 {
		t.Fatalf("random policy failed without a failure kind: %v", rep.FailureKinds)
	}
}

func TestEvalMisuse(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--domain", "math", "--harness", "h0", "--k", "0"},
		{"eval", "--domain", "math", "--harness", "h0", "--split", "nope"},
		{"eval", "--domain", "math"},
		{"eval", "--domain", "math", "--harness", "h0", "--policy", "psychic"},
		{"eval", "--domain", "math", "--harness", "h0", "--policy", "oracle", "--model", "x.safetensors"},
		{"eval", "--domain", "nope", "--harness", "h0", "--policy", "oracle"},
		{"eval", "--domain", "math", "--harness", "h0", "--max-batch", "-1"},
	} {
		_, err := runWhale(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
	_, err := runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--model", filepath.Join(t.TempDir(), "missing.safetensors"))
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("missing model file: want an error naming it (exit 1), got %v", err)
	}
}

func TestEvalGridWritesCandidates(t *testing.T) {
	dir := t.TempDir()
	out, err := runWhale(t, "eval", "--domain", "chess", "--harness", "h0", "--split", "val", "--n", "8", "--policy", "oracle", "--grid", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Base       evalReport `json:"base"`
		Candidates []gridRow  `json:"candidates"`
	}
	lastJSONLine(t, out, &rep)
	if rep.Base.MeanAtK != 1 || len(rep.Candidates) < 10 {
		t.Fatalf("grid: base %.3f, %d candidates", rep.Base.MeanAtK, len(rep.Candidates))
	}
	for _, c := range rep.Candidates {
		if _, err := os.Stat(c.File); err != nil {
			t.Errorf("candidate %s=%s: %v", c.Knob, c.Choice, err)
		}
		if c.Report.HarnessHash == rep.Base.HarnessHash {
			t.Errorf("candidate %s=%s has h0's hash", c.Knob, c.Choice)
		}
	}
}

// TestEvalEmbeddedSmoke runs the embedded base model on 16 tasks of each
// domain: it must load, sample and parse end to end. Its scores are the
// calibration's business (docs/BASE_MODEL.md), not this test's.
func TestEvalEmbeddedSmoke(t *testing.T) {
	for _, d := range []string{"math", "searchqa", "chess"} {
		out, err := runWhale(t, "eval", "--domain", d, "--harness", "h0", "--split", "val", "--k", "1", "--n", "16", "--max-new-tokens", "96", "--json")
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		var rep evalReport
		lastJSONLine(t, out, &rep)
		if rep.Tasks != 16 || rep.Rollouts != 16 || rep.ModelHash != basemodel.SHA256 || rep.PolicyCalls < 16 {
			t.Fatalf("%s: report %+v", d, rep)
		}
		if len(rep.HarnessErrors) > 0 {
			t.Errorf("%s: harness errors %v", d, rep.HarnessErrors)
		}
		t.Logf("%s: mean@1 %.3f over 16 val tasks, failures %v", d, rep.MeanAtK, rep.FailureKinds)
	}
}

func TestEvalProbe(t *testing.T) {
	out, err := runWhale(t, "eval", "--probe", "--n", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Letters, Words, Lookup *float64
		N                      int
	}
	lastJSONLine(t, out, &r)
	if r.Letters == nil || r.Words == nil || r.Lookup == nil || r.N != 2 {
		t.Fatalf("probe JSON: %s", out)
	}
}

// --probe without --n runs the default probes (--n's own default, the whole
// split, once asked a billion of each kind and ran out of memory).
func TestEvalProbeDefaultsToSixteenAndRefusesBadN(t *testing.T) {
	out, err := runWhale(t, "eval", "--probe", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ N int }
	lastJSONLine(t, out, &r)
	if r.N != 16 {
		t.Fatalf("probe ran %d of each kind, want 16", r.N)
	}
	if _, err := runWhale(t, "eval", "--probe", "--n", "0"); !isUsage(err) {
		t.Fatalf("--probe --n 0: %v, want a usage error", err)
	}
}
