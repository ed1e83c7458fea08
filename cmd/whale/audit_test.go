package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// passageValidatorFile is the h0 look-alike whose is_valid_action
// accepts only answers the passage shows.
var passageValidatorFile = filepath.Join("..", "..", "harnesses", "testdata", "hostile", "36-validator-reads-passage.star")

// `harness check --audit` and `eval --harness FILE` run the null-policy
// audit: the passage-reading validator is valid but refused, with the
// audit's figures, and eval does not evaluate it unless told to skip the
// audit.
func TestHarnessCheckAndEvalAuditAHarness(t *testing.T) {
	out, err := runWhale(t, "harness", "check", passageValidatorFile, "--domain", "searchqa", "--json")
	if err != nil {
		t.Fatalf("without --audit the harness is valid: %v", err)
	}
	out, err = runWhale(t, "harness", "check", passageValidatorFile, "--domain", "searchqa", "--audit", "--json")
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "null-policy audit refuses") || !strings.Contains(err.Error(), "a lift of +") {
		t.Fatalf("harness check --audit: want the audit's refusal (exit 1), got %v", err)
	}
	var rep harnessCheckReport
	lastJSONLine(t, out, &rep)
	if !rep.Valid || rep.Audit == nil || !rep.Audit.Refused || rep.Audit.Tasks != 128 {
		t.Fatalf("report %+v", rep)
	}
	_, err = runWhale(t, "eval", "--domain", "searchqa", "--harness", passageValidatorFile, "--policy", "random", "--n", "4")
	if err == nil || !strings.Contains(err.Error(), "null-policy audit refuses") || !strings.Contains(err.Error(), "not evaluated") {
		t.Fatalf("eval: want the audit's refusal, got %v", err)
	}
	if _, err := runWhale(t, "eval", "--domain", "searchqa", "--harness", passageValidatorFile, "--policy", "random", "--n", "4", "--no-audit"); err != nil {
		t.Fatalf("eval --no-audit: %v", err)
	}
}

// `harness check` holds every SEARCH_SPACE choice to the contract and
// names the choice's line and column.
func TestHarnessCheckRefusesAnOutOfContractSearchSpace(t *testing.T) {
	p := filepath.Join("..", "..", "harnesses", "testdata", "hostile", "05-space-max-turns.star")
	_, err := runWhale(t, "harness", "check", p, "--domain", "math")
	var ue usageError
	if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), p+":24:22: search-space: choice 99 of \"MAX_TURNS\" breaks the contract: MAX_TURNS = 99 is out of range; allowed 1..6") {
		t.Fatalf("want the choice refused at file:line:col (exit 1), got %v", err)
	}
}

// `whale run --harness FILE` audits the starting harness before the run
// is recorded: the refusal names the file and gives the audit's figures,
// and no run is left behind.
func TestRunRefusesAStartingHarnessTheAuditRefuses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "w.db")
	_, err := runWhale(t, "run", "--headless", "--domain", "searchqa", "--preset", "tiny", "--harness", passageValidatorFile, "--db", db)
	if err == nil || !strings.Contains(err.Error(), "null-policy audit refuses starting harness "+passageValidatorFile) || !strings.Contains(err.Error(), "a lift of +") {
		t.Fatalf("want the audit's refusal naming the file, got %v", err)
	}
	out, err := runWhale(t, "runs", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "searchqa-") {
		t.Fatalf("a refused run was recorded:\n%s", out)
	}
}
