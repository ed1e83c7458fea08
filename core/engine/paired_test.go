package engine

import (
	"context"
	"strings"
	"testing"

	"whale/core/policy"
	"whale/core/search"
	"whale/data/domains"
	"whale/harnesses"
	"whale/internal/longtests"
)

// keyRecorder passes requests on and records their keys.
type keyRecorder struct {
	inner policy.Policy
	keys  []string
}

// Unwrap lets the runtime find the oracle behind the recorder.
func (k *keyRecorder) Unwrap() policy.Policy { return k.inner }

func (k *keyRecorder) Generate(ctx context.Context, reqs []policy.Request) ([]policy.Completion, error) {
	for _, r := range reqs {
		k.keys = append(k.keys, r.Key)
	}
	return k.inner.Generate(ctx, reqs)
}

func TestScoringDrawsTheSameKeysForEveryHarness(t *testing.T) {
	env := testEnv(t, openDB(t))
	rec := &keyRecorder{inner: env.Policy}
	env.Policy = rec
	e, err := New(tinyConfig(t), env, "p")
	if err != nil {
		t.Fatal(err)
	}
	src, err := harnesses.Builtin("math", "h0")
	if err != nil {
		t.Fatal(err)
	}
	other, err := harnesses.Mutate(harnesses.Normalize(src), "SYSTEM_PROMPT", "SYSTEM_STEPWISE")
	if err != nil {
		t.Fatal(err)
	}
	sc := e.scorer()
	ctx := context.Background()
	var keys [2][]string
	for i, s := range []string{src, other} {
		rec.keys = nil
		outs, err := sc.Score(ctx, s, e.val, 0)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = rec.keys
		calls := 0
		for _, o := range outs {
			calls += o.Calls
		}
		if calls != len(rec.keys) {
			t.Fatalf("outcomes count %d model calls, the policy saw %d", calls, len(rec.keys))
		}
	}
	if len(keys[0]) == 0 || keys[0][0] != keys[1][0] || strings.Contains(keys[0][0], harnesses.Hash(src)[:12]) {
		t.Fatalf("first keys %q and %q: scoring keys must name the task and pass, not the harness", keys[0][0], keys[1][0])
	}
	if l := e.State().Ledger; l.SearchCalls != len(keys[0])+len(keys[1]) || l.Search != 2*len(e.val) || l.Budgeted() != l.SearchCalls {
		t.Fatalf("ledger %+v after %d+%d calls", l, len(keys[0]), len(keys[1]))
	}
}

func TestNullAuditRefusesAHarnessThatNarrowsTheAnswer(t *testing.T) {
	env := testEnv(t, openDB(t))
	dom, err := domains.Open("searchqa", 1)
	if err != nil {
		t.Fatal(err)
	}
	env.Domain, env.Policy = dom, mixed(t, dom)
	cfg, err := Preset("tiny", "searchqa")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, env, "n")
	if err != nil {
		t.Fatal(err)
	}
	src, err := harnesses.Builtin("searchqa", "h0")
	if err != nil {
		t.Fatal(err)
	}
	src = harnesses.Normalize(src)
	ctx := context.Background()
	// A prompt change a content-blind policy cannot exploit: no lift.
	fair, err := harnesses.Mutate(src, "SYSTEM_PROMPT", "SYSTEM_CHECKLIST")
	if err != nil {
		t.Fatal(err)
	}
	// A harness that does the reading itself: it shows, instead of the
	// question and passages, only the capitalised words and years of the
	// top passage that the question does not contain — the answer
	// candidates — so that whatever a policy copies is likely the answer.
	// The lint cannot see that; the audit must.
	cheat := strings.Replace(src, "format_tool_result = _tool_keep_k", `def _tool_candidates(name, result, state):
    top = _passages(result)[:1]
    if not top:
        return result
    q = state["question"].lower()
    words = re.findall(r"\b(?:[A-Z][a-z]+|[0-9]{4})\b", top[0])
    keep = []
    for w in words:
        if w.lower() not in q and w not in keep:
            keep.append(w)
    return " ".join(keep)
format_tool_result = _tool_candidates`, 1)
	cheat = strings.Replace(cheat, `def _obs_plain(obs, state):
    state["question"] = _question(obs)
    return "Question: " + state["question"]`, `def _obs_plain(obs, state):
    state["question"] = _question(obs)
    return "?"`, 1)
	cheat = strings.Replace(cheat, `"format_tool_result": [_tool_keep_k, _tool_titles_line]`, `"format_tool_result": [_tool_keep_k, _tool_titles_line, _tool_candidates]`, 1)
	if cheat == src {
		t.Fatal("the test's cheat did not apply to h0")
	}
	for i, s := range []string{fair, cheat} {
		if _, err := e.load(s); err != nil {
			t.Fatal(err)
		}
		ent := &search.Entry{Source: s}
		ok, err := e.admit(ctx, ent)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("harness %d: admitted %v, null lift %+.3f (h0 null score %.3f)", i, ok, ent.NullLift, *e.nullBase)
		if i == 0 && (!ok || ent.NullLift > NullLiftLimit || !ent.HasNull) {
			t.Fatalf("a prompt change: admitted %v, null lift %.3f; want admitted", ok, ent.NullLift)
		}
		if i == 1 && (ok || !ent.NullRefused || ent.NullLift <= NullLiftLimit) {
			t.Fatalf("a harness that narrows the passage to the answer candidates: admitted %v with null lift %.3f", ok, ent.NullLift)
		}
	}
}

// The default proposer never runs dry: a harness-only run on fixed weights
// spends its whole budget (to within one val pass: it ends when what is
// left cannot pay for one), however many candidates that takes, and every
// candidate it scored carries a paired gain over the incumbent of its time.
func TestFragmentSearchSpendsItsBudget(t *testing.T) {
	longtests.SkipShort(t, "a 400-call run")
	cfg := tinyConfig(t)
	cfg.Condition, cfg.MaxRounds, cfg.Budget = "harness-only", 0, 400
	e, err := New(cfg, testEnv(t, openDB(t)), "f")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st := e.State()
	if !spentItsBudget(e, sum.ModelCalls) || st.Exhausted != "" || !st.Starved {
		t.Fatalf("spent %d of %d model calls (exhausted %q)", sum.ModelCalls, cfg.Budget, st.Exhausted)
	}
	compared := 0
	for _, ent := range st.Archive.Entries {
		if ent.Proposer == "fragment" && ent.Complete {
			if !ent.HasGain {
				t.Fatalf("candidate %s was scored but never compared", ent.Hash[:12])
			}
			compared++
		}
	}
	if compared < 3 {
		t.Fatalf("%d fragment candidates compared", compared)
	}
}
