package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/tokenizer"
	"whale/data/domains"
	"whale/harnesses"
)

// passageValidator is the example: a harness that looks like h0
// but whose is_valid_action accepts no answer except a name or year shown
// in the passage (and ten retries to find it).
func passageValidator(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "harnesses", "testdata", "hostile", "36-validator-reads-passage.star"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A starting harness the null-policy audit refuses stops the run before
// anything is recorded or rolled out, with the audit's figures in the
// error; the same harness gets the same verdict from AuditHarness
// (`whale harness check --audit`, `whale eval`), and a fair variant of h0
// starts.
func TestStartingHarnessIsAudited(t *testing.T) {
	dom, err := domains.Open("searchqa", 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Preset("tiny", "searchqa")
	if err != nil {
		t.Fatal(err)
	}
	cheat := passageValidator(t)
	db := openDB(t)
	env := testEnv(t, db)
	env.Domain, env.Policy = dom, mixed(t, dom)
	cfg.Harness = cheat
	_, err = New(cfg, env, "cheat")
	if err == nil {
		t.Fatal("a run started with a harness that reads the answer off the passage")
	}
	for _, want := range []string{"null-policy audit refuses", "under h0", "audit tasks", "a lift of +", "against the limit of +3.0"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("refusal lacks %q: %v", want, err)
		}
	}
	if _, gerr := db.GetRun("cheat"); gerr == nil {
		t.Fatal("the refused run was recorded")
	}
	t.Log(err)

	h, err := harnesses.Load("cheat.star", cheat, harnesses.EnvOf(dom))
	if err != nil {
		t.Fatalf("the static checks cannot see it, so it must load: %v", err)
	}
	a, ok, err := AuditHarness(context.Background(), dom, tokenizer.Bytes{}, h, 0, cfg.Seed)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !a.Refused || a.Lift <= NullLiftLimit || a.Tasks != nullTasks || a.K != nullK {
		t.Fatalf("AuditHarness: %+v; want refused over %d tasks × %d", a, nullTasks, nullK)
	}
	t.Log(a.Sentence())

	h0, err := harnesses.Builtin("searchqa", "h0")
	if err != nil {
		t.Fatal(err)
	}
	fair, err := harnesses.Mutate(h0, "SYSTEM_PROMPT", "SYSTEM_CHECKLIST")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Harness = fair
	e, err := New(cfg, env, "fair")
	if err != nil {
		t.Fatalf("a prompt change of h0 was refused: %v", err)
	}
	inc := e.State().Archive.Entries[e.State().Archive.Incumbent]
	if !inc.HasNull || inc.NullLift > NullLiftLimit {
		t.Fatalf("the starting entry does not carry its audit: %+v", inc)
	}
}
