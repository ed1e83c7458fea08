package experiments

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"whale/core/experiments/report"
)

// RecordFile is the record's name beside the report (docs/results).
const RecordFile = "runs.jsonl"

// Record is what a bench keeps of its finished runs outside the store: one
// JSON line per run, its report row and the configuration it ran under,
// sorted by run id. It sits beside the report and is committed with it, so
// a bench whose store is gone (a fresh clone, another machine) reads the
// runs it holds instead of running them again — each only after checking
// that the job's configuration is the one recorded — and the report can be
// rebuilt from it alone. Every finished run a bench runs or reads from its
// store is written to it. Safe for concurrent use.
type Record struct {
	path  string
	mu    sync.Mutex
	rows  map[string]RecordRow
	found bool // the file existed when opened, or has been written since
	reads int  // jobs answered from the record
	stale int  // recorded runs of an older RunsVersion, run again
}

// RunsVersion is the version of what a condition's runs compute under a
// given configuration. The record checks a job's configuration, but a
// change to the code (how harness search spends its budget, when val is
// measured) can change a run's result under the same one: whoever makes
// such a change bumps the version of every condition it touches, and
// recorded runs of an older version are run again instead of read.
// Version 2 is the first tracked (session 12: harness phases bounded,
// budget-exact search, val measured once per weights and incumbent); the
// version-1 runs were withdrawn from the committed record by hand, and a
// row without a version is version 2. Version 3 of the WHALE conditions:
// a harness phase re-scores old entries only beyond M new candidates.
// Session 13 priced unscored candidates by their SAMPLES (a voting
// candidate the budget or the phase cannot pay for is passed over, not
// begun and stopped): version 4 of the WHALE conditions, 3 of the other
// conditions that search harnesses. Weight-only searches nothing.
// Issue 35 (the paper's protocol: two ledgers, val draws reused by the
// scorer, exact ties stopped, every verified sample of a vote trained on,
// 256 test tasks) changed every condition: WHALE 5, the other searching
// conditions 4, weight-only 3; vote-only begins at 1.
func RunsVersion(condition string) int {
	switch condition {
	case "whale-fixed", "whale-adaptive":
		return 5
	case "harness-only", "staged", "fast-slow":
		return 4
	case "weight-only":
		return 3
	case "vote-only":
		return 1
	}
	return baseRunsVersion
}

// baseRunsVersion is the version of a row that names none.
const baseRunsVersion = 2

// RecordRow is one line of the record.
type RecordRow struct {
	Run report.Run `json:"run"`
	// Config is the run's engine configuration as the store held it.
	Config json.RawMessage `json:"config"`
	// Kernels names the CPU kernels of the process that recorded the run
	// (kernels.KernelName): a run is deterministic on one machine, but
	// AVX-512 and AVX2 kernels round differently, so a bench continued on
	// another machine mixes two sets of numerics, and the report says so.
	Kernels string `json:"kernels,omitempty"`
	// Build is the VCS revision of the whale that recorded the run ("+"
	// when its tree was modified): a change to the code's arithmetic
	// changes runs as other kernels do.
	Build string `json:"build,omitempty"`
	// Version is the RunsVersion of the run's condition that recorded it
	// (0: baseRunsVersion).
	Version int `json:"version,omitempty"`
	// Model is the sha256 of the model the run started from (Env.ModelID:
	// the embedded base model's, or the --model file's). The configuration
	// names the architecture, not the weights, so without it a bench
	// resumed after the embedded model changed would mix two models.
	Model string `json:"model,omitempty"`
	// PeakRSSBytes is the recording process's peak resident memory when
	// the run finished (Linux's VmHWM; 0 where /proc reports none): with
	// Env.Workers runs side by side, theirs together since the process
	// began.
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
}

// version is the row's RunsVersion.
func (row RecordRow) version() int {
	if row.Version == 0 {
		return baseRunsVersion
	}
	return row.Version
}

// origin is where a row's numerics come from, for the report.
func (row RecordRow) origin() string {
	k, b := row.Kernels, "build "+row.Build
	if k == "" {
		k = "kernels not recorded"
	}
	if row.Build == "" {
		b = "build not recorded"
	}
	return b + ", " + k
}

// OpenRecord reads the record at path; a missing file is an empty record
// (written on the first Put). Every line must be a finished run's row with
// a configuration, each run id once; an error names the file and line.
func OpenRecord(path string) (*Record, error) {
	rows, found, err := readRecord(path)
	if err != nil {
		return nil, err
	}
	return &Record{path: path, rows: rows, found: found}, nil
}

// readRecord reads the rows of the record at path (none for a missing
// file, with found false); see OpenRecord.
func readRecord(path string) (rows map[string]RecordRow, found bool, err error) {
	rows = map[string]RecordRow{}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rows, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("experiments: record: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var row RecordRow
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&row); err != nil {
			return nil, true, fmt.Errorf("experiments: record %s:%d: %w", path, line, err)
		}
		if err := row.check(); err != nil {
			return nil, true, fmt.Errorf("experiments: record %s:%d: %w", path, line, err)
		}
		if _, dup := rows[row.Run.RunID]; dup {
			return nil, true, fmt.Errorf("experiments: record %s:%d: run %s is recorded twice", path, line, row.Run.RunID)
		}
		rows[row.Run.RunID] = row
	}
	if err := sc.Err(); err != nil {
		return nil, true, fmt.Errorf("experiments: record %s: %w", path, err)
	}
	return rows, true, nil
}

// check refuses a row the report could not use.
func (row RecordRow) check() error {
	switch {
	case row.Run.RunID == "":
		return errors.New("run_id is missing")
	case !row.Run.Done:
		return fmt.Errorf("run %s is not finished (the record keeps finished runs only)", row.Run.RunID)
	case len(row.Config) == 0:
		return fmt.Errorf("run %s has no config", row.Run.RunID)
	case row.Version < 0:
		return fmt.Errorf("run %s has version %d (want ≥ 1)", row.Run.RunID, row.Version)
	}
	return report.Validate([]report.Run{row.Run})
}

// Path is the record's file.
func (rec *Record) Path() string { return rec.path }

// Found reports whether the record's file existed when it was opened or
// has been written since (a missing file opens as an empty record).
func (rec *Record) Found() bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.found
}

// Reads is how many jobs the record has answered.
func (rec *Record) Reads() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.reads
}

// Stale is how many recorded runs were of an older RunsVersion than
// their condition's, and so were run again rather than read.
func (rec *Record) Stale() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.stale
}

// Origins counts the recorded runs by the build and kernels that
// recorded them.
func (rec *Record) Origins() map[string]int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := map[string]int{}
	for _, row := range rec.rows {
		out[row.origin()]++
	}
	return out
}

// Has reports whether run id is recorded.
func (rec *Record) Has(id string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	_, ok := rec.rows[id]
	return ok
}

// read answers job j, starting from the model whose sha256 is model,
// from the record: ok is false when it holds no such run, or only one of
// an older RunsVersion or one recorded without its model (counted in
// Stale; the job's new run replaces it); a recorded run of another model,
// configuration, condition, domain or seed is an error naming the record.
func (rec *Record) read(j Job, model string) (r report.Run, ok bool, err error) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	row, ok := rec.rows[j.ID]
	if !ok {
		return r, false, nil
	}
	if row.version() != RunsVersion(j.Condition) || row.Model == "" && model != "" {
		rec.stale++
		return r, false, nil
	}
	if row.Model != model {
		return r, true, fmt.Errorf("experiments: record %s: run %s started from the model %s, this bench from %s: give it another --out or --record",
			rec.path, j.ID, short(row.Model), short(model))
	}
	if err := j.ranAs(row.Config); err != nil {
		return r, true, fmt.Errorf("record %s: %w", rec.path, err)
	}
	if row.Run.Condition != j.Condition || row.Run.Domain != j.Domain || row.Run.Seed != j.Seed {
		return r, true, fmt.Errorf("experiments: record %s: run %s is %s on %s with seed %d, not the job's %s on %s with seed %d",
			rec.path, j.ID, row.Run.Condition, row.Run.Domain, row.Run.Seed, j.Condition, j.Domain, j.Seed)
	}
	rec.reads++
	return row.Run, true, nil
}

// Put records a finished run and rewrites the file (through a temporary
// file and a rename, so a crash leaves the old record or the new one),
// holding a lock on the record (a file beside it, path + ".lock") and
// keeping every row other processes put meanwhile: the shards of a
// bench share one record. A row equal to the recorded one writes nothing.
func (rec *Record) Put(row RecordRow) error {
	if err := row.check(); err != nil {
		return fmt.Errorf("experiments: record %s: %w", rec.path, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	line, err := json.Marshal(row)
	if err != nil {
		return err
	}
	if old, ok := rec.rows[row.Run.RunID]; ok && old.version() == row.version() {
		if old.Kernels != "" || old.Build != "" || old.PeakRSSBytes != 0 {
			// the same run, read again elsewhere: it was computed
			// where it was first recorded
			row.Kernels, row.Build, row.PeakRSSBytes = old.Kernels, old.Build, old.PeakRSSBytes
			if line, err = json.Marshal(row); err != nil {
				return err
			}
		}
		if b, _ := json.Marshal(old); bytes.Equal(b, line) {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(rec.path), 0o755); err != nil {
		return fmt.Errorf("experiments: record: %w", err)
	}
	// Other processes (a sharded bench's) may write the same record: the
	// file is rewritten under a lock, with the rows they wrote since this
	// one read it.
	unlock, err := lockFile(rec.path + ".lock")
	if err != nil {
		return fmt.Errorf("experiments: record %s: %w", rec.path, err)
	}
	defer unlock()
	disk, _, err := readRecord(rec.path)
	if err != nil {
		return err
	}
	for id, r := range disk {
		if _, ok := rec.rows[id]; !ok {
			rec.rows[id] = r
		}
	}
	rec.rows[row.Run.RunID] = row
	var buf bytes.Buffer
	for _, id := range slices.Sorted(maps.Keys(rec.rows)) {
		b, err := json.Marshal(rec.rows[id])
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	tmp := rec.path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("experiments: record: %w", err)
	}
	if err := os.Rename(tmp, rec.path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("experiments: record: %w", err)
	}
	rec.found = true
	return nil
}

// short is a sha256's first 12 digits, or "an unnamed model".
func short(sha string) string {
	if sha == "" {
		return "an unnamed model"
	}
	return sha[:min(12, len(sha))]
}
