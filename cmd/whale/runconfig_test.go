package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"whale/core/engine"
	"whale/core/model"
)

func TestRunConfigFileMisuseNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	for _, c := range []struct {
		name, body string
		args       []string
		want       string
	}{
		{"unknown key", "headless = true\ndomian = \"math\"\n", nil, "r.toml:2: domian: unknown key"},
		{"string for a count", "headless = true\ndomain = \"math\"\nbudget = \"lots\"\n", nil, `r.toml:3: budget: string "lots", want an integer`},
		{"bad duration", "headless = true\ndomain = \"math\"\nresume-every = \"soon\"\n", nil, "r.toml:3: resume-every:"},
		{"refused by the engine", "headless = true\ndomain = \"math\"\npreset = \"tiny\"\n\nschedule = \"weekly\"\n", nil, "r.toml:5: schedule: refused"},
		{"engine table key refused", "headless = true\ndomain = \"math\"\n[engine]\nval_k = 0\n", nil, "r.toml:4: [engine] val_k: refused"},
		{"engine table unknown key", "[engine]\nval_kk = 0\n", nil, "r.toml:2: [engine] val_kk: unknown key"},
		{"engine table wrong type", "headless = true\ndomain = \"math\"\n[engine]\nval_k = \"two\"\n", nil, "r.toml:4: [engine] val_k: a string where a int belongs"},
		{"not TOML", "domain = \n", nil, "r.toml:1:"},
		// The command line wins: its preset and weights are used, so
		// the file's unknown preset is never read and the error is the
		// command line's operator.
		{"flags win", "headless = true\ndomain = \"math\"\npreset = \"nope\"\n", []string{"--preset", "tiny", "--weights", "ppo"}, "operator"},
	} {
		path := filepath.Join(dir, "r.toml")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runWhale(t, append([]string{"run", "--config", path, "--db", db}, c.args...)...)
		if err == nil || !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a usage error containing %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("a refused configuration created the workspace")
	}
}

// TestShowConfigReadsBackToTheSameConfig writes a stored configuration
// with every flag-backed and [engine] field away from the presets'
// values as TOML (whale show RUN --config) and reads it back through
// whale run's flags: the same engine.Config.
func TestShowConfigReadsBackToTheSameConfig(t *testing.T) {
	want, err := engine.Preset("tiny", "searchqa")
	if err != nil {
		t.Fatal(err)
	}
	want.Seed, want.Condition, want.Schedule, want.E, want.I = 9, "", "fixed", 0.3, 3
	want.Operator, want.LR, want.KL, want.Replay, want.Budget, want.MaxRounds = "rsft", 2.5e-4, 0.01, 2, 96, 3
	want.HarnessCalls, want.HarnessPasses, want.Candidates, want.Proposer = 50, 3.5, 3, "grid"
	want.GridKnobs = []string{"SAMPLES", "RETRIEVE_K"}
	want.Harness = "SYSTEM_PROMPT = \"say \\\"hi\\\"\"\n# a line = that looks like a key\n"
	want.SampleBF16, want.SampleKVBF16 = true, true
	want.LoRA = &model.LoRAConfig{Rank: 4, Alpha: 6, Targets: []string{"q", "v"}, BF16Base: true}
	want.Threshold, want.PromptsPerStep, want.Group, want.TrainTasks = 0.75, 3, 4, 40
	want.ValTasks, want.AuditTasks, want.TestTasks, want.ValK, want.TestK = 9, 5, 7, 2, 3
	want.MaxNewTokens, want.Temperature, want.CurveTest, want.CurveK = 40, 0.7, true, 1
	raw, _ := json.Marshal(want)

	var out strings.Builder
	if err := printRunConfig(&out, "r1", raw); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.toml")
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var fl runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fl.register(fs)
	fl.file.path = path
	if err := fl.file.apply(fs, true); err != nil {
		t.Fatal(err)
	}
	got, err := fl.config(fs)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		t.Errorf("read back:\n%s\nwant\n%s\nfile:\n%s", g, raw, out.String())
	}
}

// storedEventsJSON is a run's stored events as JSON, its id replaced by
// RUN (checkpoint ids and the summary hold it).
func storedEventsJSON(t *testing.T, dbPath, id string) string {
	t.Helper()
	r, evs, err := storedRunEvents(dbPath, id)
	if err != nil || r.ID != id {
		t.Fatalf("events of %s: %v", id, err)
	}
	b, _ := json.Marshal(evs)
	return strings.ReplaceAll(string(b), id, "RUN")
}

// TestShowConfigThenRunReproducesTheRun is the check: 'whale show
// RUN --config > r.toml; whale run --config r.toml --headless' makes the
// same run bit for bit on the CPU (every stored event, the final weights'
// hash among them, and the stored configuration).
func TestShowConfigThenRunReproducesTheRun(t *testing.T) {
	longTinyRun(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "w.db")
	first := tinyRun(t, db, "run", "--headless", "--domain", "math", "--preset", "tiny", "--rounds", "1", "--seed", "3", "--lr", "2e-4")
	conf, err := runWhale(t, "show", first, "--db", db, "--config")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "r.toml")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // run ids carry the second
	second := tinyRun(t, db, "run", "--config", path, "--headless")
	if first == second {
		t.Fatalf("the second run has the first's id %s", first)
	}
	a, b := storedEventsJSON(t, db, first), storedEventsJSON(t, db, second)
	if a != b {
		t.Errorf("the runs' events differ:\n%s\n%s", a, b)
	}
	conf2, err := runWhale(t, "show", second, "--db", db, "--config")
	if err != nil || strings.ReplaceAll(conf2, second, first) != conf {
		t.Errorf("configurations differ (%v):\n%s\n%s", err, conf, conf2)
	}
}

// tinyRun runs whale with args (and --db db --json) and returns the run id.
func tinyRun(t *testing.T, db string, args ...string) string {
	t.Helper()
	out, err := runWhale(t, append(args, "--db", db, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		RunID string `json:"run_id"`
	}
	lastJSONLine(t, out, &sum)
	return sum.RunID
}

func TestBenchConditionsConfigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "b.toml")
	db := filepath.Join(dir, "b.db")
	for _, c := range []struct{ body, want string }{
		{"domain = \"math\"\nseeds = 0\n", "--seeds 0"},
		{"domain = \"math\"\n\nseeds = \"three\"\n", `b.toml:3: seeds: string "three", want an integer`},
		{"domain = \"math\"\nval_tasks = 3\n", "b.toml:2: val_tasks: unknown key"},
		{"domain = \"math\"\n[engine]\nval_tasks = 3\n", "b.toml:3: [engine] val_tasks: this command's file has no [engine] table"},
	} {
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runWhale(t, "bench", "conditions", "--config", path, "--db", db)
		if !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error containing %q", c.body, err, c.want)
		}
	}
	// The command line wins over the file's seeds.
	if err := os.WriteFile(path, []byte("domain = \"math\"\nseeds = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runWhale(t, "bench", "conditions", "--config", path, "--seeds", "1", "--preset", "huge", "--db", db); !isUsage(err) || !strings.Contains(err.Error(), "huge") {
		t.Errorf("--seeds 1 over the file's 0: %v, want the --preset error instead of the seeds one", err)
	}
}
