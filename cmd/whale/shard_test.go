package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// provenance drops from a report what says how this invocation got its
// runs (ran or read, how long it took) and the compute time runs took
// (the header's sum, the table's "compute per run" column), which is all
// a sharded bench's report may differ in from an unsharded one's.
var provenance = regexp.MustCompile(`This invocation took [^\n]*|- Compute: [^\n]*|(?m)\| [0-9][^|]*(s|min) \|$`)

// withoutCompute is results.csv with its compute_s column emptied.
func withoutCompute(t *testing.T, csv string) string {
	t.Helper()
	lines := strings.Split(csv, "\n")
	col := slices.Index(strings.Split(lines[0], ","), "compute_s")
	if col < 0 {
		t.Fatalf("results.csv has no compute_s column: %s", lines[0])
	}
	for i := 1; i < len(lines); i++ {
		if f := strings.Split(lines[i], ","); len(f) > col {
			f[col] = ""
			lines[i] = strings.Join(f, ",")
		}
	}
	return strings.Join(lines, "\n")
}

// A bench sharded over three processes of the whale binary, each with a
// store of its own and one shared record, then reported by a call without
// --shard, writes the same RESULTS.md and results.csv as the bench run in
// one process.
func TestABenchShardedOverThreeProcessesWritesTheSameReport(t *testing.T) {
	dir := t.TempDir()
	modelPath := tinyModelFile(t, dir)
	bench := []string{"bench", "conditions", "--domain", "math", "--preset", "tiny", "--seeds", "2", "--budget", "16",
		"--conditions", "weight-only,harness-only,vote-only", "--workers", "1", "--model", modelPath}
	shared := filepath.Join(dir, "shared")
	// A report from a record that is not there says so, and from a record
	// before any of the plan's runs has finished says that.
	partialDB := filepath.Join(dir, "partial.db")
	if _, err := runWhale(t, append(append([]string(nil), bench...), "--report-only", "--out", shared, "--db", partialDB)...); err == nil ||
		!strings.Contains(err.Error(), "there is no record at "+filepath.Join(shared, "runs.jsonl")) {
		t.Fatalf("--report-only without a record: %v", err)
	}
	emptyRecord := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(emptyRecord, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runWhale(t, append(append([]string(nil), bench...), "--report-only", "--out", shared, "--record", emptyRecord, "--db", partialDB)...); err == nil ||
		!strings.Contains(err.Error(), "holds none of this plan's 6 runs") {
		t.Fatalf("--report-only over an empty record: %v", err)
	}

	var wg sync.WaitGroup
	outs := make([][]byte, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append(append([]string(nil), bench...), "--shard", []string{"0/3", "1/3", "2/3"}[i],
				"--db", filepath.Join(dir, "shard"+string(rune('0'+i))+".db"), "--out", shared)
			child := exec.Command(os.Args[0], args...)
			child.Env = append(os.Environ(), "WHALE_TEST_AS_MAIN=1")
			outs[i], errs[i] = child.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/3: %v\n%s", i, err, outs[i])
		}
		if !strings.Contains(string(outs[i]), "runs finished, kept in") {
			t.Fatalf("shard %d/3 does not say where its runs are:\n%s", i, outs[i])
		}
	}
	for i := range 3 {
		runs, err := runWhale(t, "runs", "--db", filepath.Join(dir, "shard"+string(rune('0'+i))+".db"))
		if err != nil || !strings.Contains(runs, "bench-math") {
			t.Errorf("shard %d/3 ran nothing (%v):\n%s", i, err, runs)
		}
	}
	if _, err := os.Stat(filepath.Join(shared, "RESULTS.md")); !os.IsNotExist(err) {
		t.Fatalf("a shard wrote the report: %v", err)
	}
	// Read while the shards' runs are done and before the report's call:
	// the same report, written from the record alone (no store opened).
	partial := filepath.Join(dir, "partial")
	if _, err := runWhale(t, append(append([]string(nil), bench...), "--report-only", "--record", filepath.Join(shared, "runs.jsonl"), "--out", partial, "--db", partialDB)...); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(partialDB); !os.IsNotExist(err) {
		t.Errorf("--report-only opened a store: %v", err)
	}
	sharded, err := runWhale(t, append(append([]string(nil), bench...), "--db", filepath.Join(dir, "report.db"), "--out", shared)...)
	if err != nil {
		t.Fatal(err)
	}
	if runs, _ := runWhale(t, "runs", "--db", filepath.Join(dir, "report.db")); strings.Contains(runs, "bench-math") {
		t.Fatalf("the report's call ran runs again:\n%s", runs)
	}

	one := filepath.Join(dir, "one")
	unsharded, err := runWhale(t, append(append([]string(nil), bench...), "--db", filepath.Join(dir, "one.db"), "--out", one)...)
	if err != nil {
		t.Fatal(err)
	}
	if sharded != unsharded {
		t.Errorf("table from the shards:\n%s\nfrom one process:\n%s", sharded, unsharded)
	}
	for _, f := range []string{"RESULTS.md", "results.csv"} {
		a, b := readFile(t, filepath.Join(shared, f)), readFile(t, filepath.Join(one, f))
		if f == "results.csv" {
			a, b = withoutCompute(t, a), withoutCompute(t, b)
		}
		if provenance.ReplaceAllString(a, "") != provenance.ReplaceAllString(b, "") {
			t.Errorf("%s from the shards differs from one process's:\n%s\n---\n%s", f, a, b)
		}
	}
	if md := readFile(t, filepath.Join(shared, "RESULTS.md")); !strings.Contains(md, "read from the record") {
		t.Errorf("the sharded report does not say its runs were read from the record")
	}
	fromRecord := readFile(t, filepath.Join(partial, "RESULTS.md"))
	note := "Written with --report-only from the record runs.jsonl: all of the plan's 6 distinct runs are in it.\n\n"
	if !strings.Contains(fromRecord, note) {
		t.Errorf("the report from the record lacks %q", note)
	}
	// The report's call adds how long it took, which --report-only (it ran
	// nothing) leaves out, and a run the record lacks is "not finished yet"
	// to a report that cannot see the store where the bench's own report
	// knows it "never started": the paragraphs compare once those go.
	blank := regexp.MustCompile(`\n{3,}`)
	same := func(md string) string { return blank.ReplaceAllString(provenance.ReplaceAllString(md, ""), "\n\n") }
	recordOnly := strings.ReplaceAll(strings.Replace(fromRecord, note, "", 1), " not finished yet).", " never started).")
	if a, b := same(recordOnly), same(readFile(t, filepath.Join(shared, "RESULTS.md"))); a != b {
		t.Errorf("RESULTS.md from --report-only differs from the bench's:\n%s\n---\n%s", a, b)
	}
	if a, b := withoutCompute(t, readFile(t, filepath.Join(partial, "results.csv"))), withoutCompute(t, readFile(t, filepath.Join(shared, "results.csv"))); a != b {
		t.Errorf("results.csv from --report-only differs from the bench's:\n%s\n---\n%s", a, b)
	}
}

func TestShardMisuse(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "conditions", "--domain", "math", "--shard", "3/3", "--db", filepath.Join(t.TempDir(), "w.db")},
		{"bench", "conditions", "--domain", "math", "--shard", "0/3", "--record", "-", "--db", filepath.Join(t.TempDir(), "w.db")},
		{"bench", "conditions", "--domain", "math", "--report-only", "--record", "-"},
		{"bench", "conditions", "--domain", "math", "--report-only", "--shard", "0/3"},
		{"bench", "conditions", "--domain", "math", "--test-tasks", "-1", "--record", "-", "--db", filepath.Join(t.TempDir(), "w.db")},
		{"bench", "conditions", "--domain", "math", "--test-tasks", "513", "--record", "-", "--db", filepath.Join(t.TempDir(), "w.db")},
	} {
		if _, err := runWhale(t, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
