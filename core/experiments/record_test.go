package experiments

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/experiments/report"
	"whale/kernels"
)

// recordedBench runs a tiny one-seed math bench of conditions with a
// fresh record in a temporary folder (build "t1") and returns its jobs,
// the folder, the record's path, the record and the runs.
func recordedBench(t *testing.T, conditions ...string) ([]Job, string, string, *Record, []report.Run) {
	t.Helper()
	plan := Plan{Domains: []string{"math"}, Conditions: conditions, Seeds: 1, Preset: "tiny", Budget: 48,
		E: 0.25, I: 2, FastSlowE: 0.25, DataSeed: 1, Prefix: "t"}
	jobs, err := plan.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, RecordFile)
	rec, err := OpenRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, filepath.Join(dir, "a.db"))
	env.Record, env.Build, env.ModelID = rec, "t1", "5eed"
	runs, err := Run(context.Background(), env, jobs)
	if err != nil {
		t.Fatal(err)
	}
	return jobs, dir, path, rec, runs
}

func TestRecordAnswersABenchWhoseStoreIsGone(t *testing.T) {
	jobs, dir, path, _, runs := recordedBench(t, "weight-only", "whale-fixed")
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(first), "\n"); n != len(jobs) {
		t.Fatalf("record holds %d lines for %d finished runs:\n%s", n, len(jobs), first)
	}
	// A new store with the record reopened: every job is read, none run.
	rec2, err := OpenRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	env2 := testEnv(t, filepath.Join(dir, "b.db"))
	env2.Record, env2.ModelID = rec2, "5eed"
	var lines []string
	env2.Progress = func(l string) { lines = append(lines, l) }
	again, err := Run(context.Background(), env2, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if !strings.Contains(l, "read from "+path) {
			t.Fatalf("line %q: the job was not read from the record", l)
		}
	}
	if rec2.Reads() != len(jobs) {
		t.Fatalf("%d reads, want %d", rec2.Reads(), len(jobs))
	}
	for _, j := range jobs {
		if _, err := env2.Store.GetRun(j.ID); err == nil {
			t.Fatalf("%s was run again", j.ID)
		}
	}
	if len(again) != len(runs) {
		t.Fatalf("%d runs from the record, %d ran", len(again), len(runs))
	}
	for i := range runs {
		a, b := runs[i], again[i]
		if a.RunID != b.RunID || a.BestTestMean8 != b.BestTestMean8 || a.Compute != b.Compute || len(a.Curve) != len(b.Curve) || a.TestCI95 != b.TestCI95 {
			t.Fatalf("run %d from the record differs:\n%+v\n%+v", i, b, a)
		}
	}
	// Each row names the kernels and build that computed it; a row read
	// again elsewhere keeps the ones it was first recorded with.
	if o := rec2.Origins(); len(o) != 1 || o["build t1, "+kernels.KernelName()] != len(jobs) {
		t.Fatalf("origins %v, want %d runs of build t1 with %q", o, len(jobs), kernels.KernelName())
	}
	row := rec2.rows[jobs[0].ID]
	peak := row.PeakRSSBytes
	if _, err := os.Stat("/proc/self/status"); err == nil && peak <= 0 {
		t.Fatalf("a run recorded by the process that ran it has peak RSS %d", peak)
	}
	row.Kernels, row.Build, row.PeakRSSBytes = "elsewhere", "t2", peak+1
	if err := rec2.Put(row); err != nil {
		t.Fatal(err)
	}
	if got := rec2.rows[jobs[0].ID]; got.Kernels != kernels.KernelName() || got.Build != "t1" || got.PeakRSSBytes != peak {
		t.Fatalf("a re-recorded run's origin became %q, %q, peak RSS %d (want %d)", got.Build, got.Kernels, got.PeakRSSBytes, peak)
	}
	// Reading writes nothing new.
	if b, _ := os.ReadFile(path); string(b) != string(first) {
		t.Fatal("reading the record rewrote it")
	}
	// Another plan under the same ids is refused, naming the record.
	other := jobs[0]
	other.Config.Budget = 96
	if _, _, err := rec2.read(other, "5eed"); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another configuration") {
		t.Fatalf("mismatched plan: %v", err)
	}
	// So is the same plan from another starting model (the embedded
	// model replaced between two sessions of one bench).
	if _, _, err := rec2.read(jobs[0], "0ther"); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "started from the model 5eed, this bench from 0ther") {
		t.Fatalf("another model: %v", err)
	}
	// A row recorded before rows named their model is run again, not read.
	row = rec2.rows[jobs[0].ID]
	row.Model = ""
	rec2.rows[jobs[0].ID] = row
	if _, ok, err := rec2.read(jobs[0], "5eed"); ok || err != nil || rec2.Stale() != 1 {
		t.Fatalf("a row without its model: read %v, err %v, stale %d", ok, err, rec2.Stale())
	}
}

func TestRecordRefusesBadLines(t *testing.T) {
	good := `{"run":{"condition":"weight-only","domain":"math","seed":1,"run_id":"r1","done":true,"best_test_mean8":0.5,"test_ci95":[0.4,0.6]},"config":{"budget":48}}`
	for _, c := range []struct{ text, want string }{
		{good + "\n{not json\n", ":2: "},
		{good + "\n" + good + "\n", "recorded twice"},
		{strings.Replace(good, `"done":true`, `"done":false`, 1), "not finished"},
		{strings.Replace(good, `,"config":{"budget":48}`, "", 1), "no config"},
		{strings.Replace(good, `0.5`, `1.5`, 1), "not a fraction"},
		{strings.Replace(good, `"seed":1`, `"seed":1,"colour":2`, 1), "unknown field"},
		{strings.Replace(good, `,"config":{"budget":48}`, `,"config":{"budget":48},"version":-1`, 1), "version -1"},
	} {
		path := filepath.Join(t.TempDir(), RecordFile)
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenRecord(path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%q: error %v, want one naming %s and %q", c.text, err, path, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), RecordFile)
	if err := os.WriteFile(path, []byte(good+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := OpenRecord(path)
	if err != nil || !rec.Has("r1") {
		t.Fatalf("good record: %v", err)
	}
}

// A recorded run of an older RunsVersion is run again, not read, and its
// new run replaces it in the record.
func TestRecordRerunsRunsOfAnOlderVersion(t *testing.T) {
	jobs, dir, path, rec, _ := recordedBench(t, "weight-only")
	row := rec.rows[jobs[0].ID]
	if row.Version != RunsVersion("weight-only") {
		t.Fatalf("recorded at version %d, want %d", row.Version, RunsVersion("weight-only"))
	}
	row.Version, row.Build = RunsVersion("weight-only")-1, "old"
	if err := rec.Put(row); err != nil {
		t.Fatal(err)
	}
	rec2, err := OpenRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	env2 := testEnv(t, filepath.Join(dir, "b.db"))
	env2.Record, env2.Build = rec2, "t2"
	if _, err := Run(context.Background(), env2, jobs); err != nil {
		t.Fatal(err)
	}
	if _, err := env2.Store.GetRun(jobs[0].ID); err != nil || rec2.Stale() != 1 || rec2.Reads() != 0 {
		t.Fatalf("an older version's run was not run again: %v, stale %d, reads %d", err, rec2.Stale(), rec2.Reads())
	}
	if got := rec2.rows[jobs[0].ID]; got.Version != RunsVersion("weight-only") || got.Build != "t2" {
		t.Fatalf("the new run did not replace the old one in the record: version %d, build %q", got.Version, got.Build)
	}
	// A row without a version is the first tracked one.
	if (RecordRow{}).version() != baseRunsVersion {
		t.Fatal("a row without a version is not the base version")
	}
}

// TestAReportFromTheRecordRunsNothing: FromRecord answers a plan's jobs
// from the record alone, with no store: the recorded runs' rows in both
// accountings, vote-only's k from the recorded harness-only run, and the
// runs not recorded yet counted; once the bench has finished it gives
// the rows Run gave.
func TestAReportFromTheRecordRunsNothing(t *testing.T) {
	plan := Plan{Domains: []string{"math"}, Seeds: 1, Preset: "tiny", TrainCalls: 24, SearchCalls: 24, E: 0.25, I: 2, FastSlowE: 0.25, DataSeed: 1, Prefix: "t",
		Conditions: []string{report.WeightOnly, report.HarnessOnly, report.VoteOnly, report.WhaleFixed}}
	jobs, err := plan.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, err := OpenRecord(filepath.Join(dir, RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, filepath.Join(dir, "a.db"))
	env.Record, env.ModelID = rec, "5eed"
	// The bench so far: weight-only and harness-only, both accountings.
	var first []Job
	for _, j := range jobs {
		if j.Condition == report.WeightOnly || j.Condition == report.HarnessOnly {
			first = append(first, j)
		}
	}
	if _, err := Run(context.Background(), env, first); err != nil {
		t.Fatal(err)
	}
	reader := Env{Record: rec, ModelID: "5eed"} // no store, no model, no domains
	rows, runs, lacking, err := FromRecord(reader, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 6 || lacking != 2 || len(rows) != 4 {
		t.Fatalf("%d rows, %d runs, %d lacking; want 4 rows (weight-only and harness-only in both accountings), 6 runs, 2 lacking (whale-fixed, vote-only)", len(rows), runs, lacking)
	}
	for i, r := range rows {
		if j := first[i]; r.RunID != j.ID || r.Accounting != j.Accounting || !r.Done {
			t.Errorf("row %d: %s under %s (done %v), want %s under %s", i, r.RunID, r.Accounting, r.Done, j.ID, j.Accounting)
		}
	}
	// The rest of the bench, then the report from the record again: the
	// rows Run returns, vote-only's k from the recorded harness-only run.
	ran, err := Run(context.Background(), env, jobs)
	if err != nil {
		t.Fatal(err)
	}
	rows, runs, lacking, err = FromRecord(reader, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if runs != 6 || lacking != 0 || len(rows) != len(ran) {
		t.Fatalf("finished: %d rows (Run: %d), %d runs, %d lacking", len(rows), len(ran), runs, lacking)
	}
	for i := range ran {
		a, b := ran[i], rows[i]
		if a.RunID != b.RunID || a.Accounting != b.Accounting || a.BestTestMean8 != b.BestTestMean8 || a.VoteK != b.VoteK || a.VoteFrom != b.VoteFrom {
			t.Errorf("row %d from the record: %s %s %v k %d from %q; Run: %s %s %v k %d from %q", i,
				b.RunID, b.Accounting, b.BestTestMean8, b.VoteK, b.VoteFrom, a.RunID, a.Accounting, a.BestTestMean8, a.VoteK, a.VoteFrom)
		}
	}
	// Vote-only alone, read from the record: k from the recorded
	// harness-only run the whole plan names, the run Run made.
	alone := plan
	alone.Conditions = []string{report.VoteOnly}
	aj, err := alone.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	arows, _, alacking, err := FromRecord(reader, aj)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range arows {
		for _, a := range ran {
			if a.Condition == report.VoteOnly && a.Accounting == b.Accounting && (a.RunID != b.RunID || a.VoteK != b.VoteK || a.VoteFrom != b.VoteFrom) {
				t.Errorf("vote-only alone from the record: %s k %d from %q; the whole plan: %s k %d from %q", b.RunID, b.VoteK, b.VoteFrom, a.RunID, a.VoteK, a.VoteFrom)
			}
		}
	}
	if alacking != 0 || len(arows) != 2 {
		t.Errorf("vote-only alone from the record: %d rows, %d lacking; want 2 (both accountings), none lacking", len(arows), alacking)
	}
	if _, _, _, err := FromRecord(Env{}, jobs); err == nil {
		t.Error("a report from the record without a record: no error")
	}
	if _, _, _, err := FromRecord(Env{Record: rec, ModelID: "0ther"}, jobs); err == nil || !strings.Contains(err.Error(), "0ther") {
		t.Errorf("a record of another model: %v", err)
	}
}
