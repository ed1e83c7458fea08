package harnesses

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/data"
	"whale/data/domains"
)

// corpusCase is one file of testdata/hostile: a harness written to break
// the sandbox or the contract, with what must stop it in its header
// ("# stage: load" or "call", "# want: text the error must hold") and
// "# HERE" on the line the error must name. Stage "audit" is a harness
// only the null-policy audit can see through (core/engine's
// TestStartingHarnessIsAudited runs it); here it must load.
type corpusCase struct {
	file, src, stage, want string
	line                   int
}

func readCorpus(t *testing.T) []corpusCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.star"))
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusCase
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		c := corpusCase{file: filepath.Base(p), src: string(b), line: hereLine(string(b))}
		for _, l := range strings.Split(c.src, "\n") {
			if v, ok := strings.CutPrefix(l, "# stage: "); ok {
				c.stage = v
			}
			if v, ok := strings.CutPrefix(l, "# want: "); ok {
				c.want = v
			}
		}
		if c.stage == "" || c.want == "" || (c.line == 0 && c.stage != "audit") {
			t.Fatalf("%s: header needs # stage and # want, and a line marked # HERE", p)
		}
		out = append(out, c)
	}
	return out
}

// TestHostileCorpusIsRefusedOrContained loads every harness of the corpus
// and, where it loads, runs one episode: each must be refused at load or
// contained as a harness failure, with an error naming its file and the
// marked line. The limits that stop them are counted (steps, sizes),
// never timed: the test asserts on the error's text, and the hang guard
// only catches a harness that nothing stopped.
func TestHostileCorpusIsRefusedOrContained(t *testing.T) {
	fake := &fakeDomain{name: "math", turns: 3}
	qa, err := domains.Open("searchqa", 1)
	if err != nil {
		t.Fatal(err)
	}
	corpus := readCorpus(t)
	if len(corpus) < 24 {
		t.Fatalf("corpus holds %d harnesses, want at least 24", len(corpus))
	}
	for _, c := range corpus {
		t.Run(c.file, func(t *testing.T) {
			at := fmt.Sprintf("%s:%d:", c.file, c.line)
			var d data.Domain = fake
			if c.stage == "audit" {
				d = qa
			}
			var h *Harness
			var err error
			guard(t, func() { h, err = Load(c.file, c.src, EnvOf(d)) })
			if c.stage == "audit" {
				if err != nil {
					t.Fatalf("the static checks cannot see what it does, so it must load: %v", err)
				}
				return
			}
			if c.stage == "load" {
				var le *LoadError
				if !errors.As(err, &le) {
					t.Fatalf("loaded (or failed without a *LoadError: %v); want refused with %q", err, c.want)
				}
				if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), at) {
					t.Fatalf("error lacks %q at %s:\n%v", c.want, at, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("should load (it is stopped when it runs): %v", err)
			}
			pol := &Scripted{Default: func(string) Reply { return Reply{Text: "<answer>13</answer>"} }}
			var ts []Trajectory
			guard(t, func() {
				ts, err = Run(context.Background(), h, d, []data.Task{fake.make(2)[1]}, tokens(pol), RunOptions{})
			})
			if err != nil {
				t.Fatal(err)
			}
			tr := ts[0]
			if tr.Failure != FailHarness || !strings.Contains(tr.Error, c.want) || !strings.Contains(tr.Error, at) {
				t.Fatalf("failure %q, error %q; want a harness failure with %q at %s", tr.Failure, tr.Error, c.want, at)
			}
			if strings.Contains(tr.Error, "wall-clock") {
				t.Fatalf("stopped by the wall-clock guard, not by a counted limit: %s", tr.Error)
			}
		})
	}
}

// The byte charges stop bombs, not ordinary work: sorting, comparing and
// looking up a thousand 100-byte strings, hashing and indexing by them,
// stays far within one call's steps, and gives Starlark's results.
func TestByteChargesLeaveOrdinaryWorkAlone(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src := minimal + `
def _work():
    words = [("w" + str(10000 + 999 - i)[1:]) + "x" * 95 for i in range(1000)]
    s = sorted(words)
    d = {w: i for i, w in enumerate(words)}
    n = 0
    for w in words[:100]:
        if w in words and d[w] >= 0 and words.index(w) >= 0:
            n += 1
        d[w] += 1
        d[w[:3]] = d.get(w[:3], 0) + 1
    return [s[0][:5], s[-1][:5], n, max(words)[:5], hash("abc"), words == list(words), len(str(words[:10])), d[words[0]], d["w09"]]
W = _work()
`
	h, err := Load("work.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := h.globals["W"].String(), `["w0000", "w0999", 100, "w0999", 96354, True, 1040, 1, 100]`; got != want {
		t.Fatalf("W = %s, want %s", got, want)
	}
}
