package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/harnesses"
)

func TestHarnessCheckValid(t *testing.T) {
	out, err := runWhale(t, "harness", "check", "h0", "--domain", "math", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep harnessCheckReport
	lastJSONLine(t, out, &rep)
	if !rep.Valid || len(rep.Hash) != 64 || len(rep.Space) == 0 || len(rep.Knobs) == 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestHarnessCheckInvalid(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.star")
	if err := os.WriteFile(p, []byte("SYSTEM_PROMPT = 3\nMAX_TURNS = 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runWhale(t, "harness", "check", p, "--domain", "math", "--json")
	var ue usageError
	if err == nil || errors.As(err, &ue) {
		t.Fatalf("want a plain error (exit 1), got %v", err)
	}
	if !strings.Contains(err.Error(), p+":2:1: range: MAX_TURNS = 1000 is out of range; allowed 1..6") {
		t.Fatalf("error lacks the file:line message:\n%v", err)
	}
	var rep harnessCheckReport
	lastJSONLine(t, out, &rep)
	if rep.Valid || len(rep.Issues) == 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestHarnessRunOracleAndRandom(t *testing.T) {
	for _, c := range []struct {
		policy string
		ok     func(float64) bool
	}{{"oracle", func(m float64) bool { return m == 1 }}, {"random", func(m float64) bool { return m < 0.05 }}} {
		out, err := runWhale(t, "harness", "run", "h0", "--domain", "math", "--policy", c.policy, "--n", "20", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var rep harnessRunReport
		lastJSONLine(t, out, &rep)
		if rep.Tasks != 20 || !c.ok(rep.Mean) {
			t.Fatalf("%s: report %+v", c.policy, rep)
		}
	}
}

func TestHarnessUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"harness", "check", "h0"},
		{"harness", "check", "h0", "--domain", "nope"},
		{"harness", "run", "h0", "--domain", "math", "--policy", "clever"},
		{"harness", "run", "h0", "--domain", "math", "--n", "0"},
		{"harness", "diff", "only-one"},
	} {
		_, err := runWhale(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Fatalf("%v: want a usage error (exit 2), got %v", args, err)
		}
	}
}

func TestHarnessDiff(t *testing.T) {
	src, err := harnesses.Builtin("math", "h0")
	if err != nil {
		t.Fatal(err)
	}
	mut, err := harnesses.Mutate(src, "MAX_TURNS", "4")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.star")
	if err := os.WriteFile(p, []byte(mut), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runWhale(t, "harness", "diff", "h0", p, "--domain", "math")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "-MAX_TURNS = 3\n+MAX_TURNS = 4\n") || !strings.Contains(out, harnesses.Hash(mut)) {
		t.Fatalf("diff output:\n%s", out)
	}
}
