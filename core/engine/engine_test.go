package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/model/modeltest"
	"whale/core/policy"
	"whale/core/store"
	"whale/core/tokenizer"
	"whale/data"
	"whale/data/domains"
	"whale/harnesses"
	"whale/internal/longtests"
	"whale/kernels"
)

var testModel = modeltest.Config()

func testEnv(t *testing.T, db *store.DB) Env {
	t.Helper()
	dom, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(testModel, kernels.NewCPU(), 5)
	if err != nil {
		t.Fatal(err)
	}
	// A resume point after every step: the tests of resume stop at a
	// given save (TestSparseResumePointsResumeExactly covers the default).
	return Env{Domain: dom, Bundle: byteBundle(t, m), Store: db,
		Policy: mixed(t, dom), ResumeEvery: -1}
}

// byteBundle is m with the byte tokenizer, made in memory.
func byteBundle(t *testing.T, m *model.Model) *bundle.Bundle {
	t.Helper()
	b, err := bundle.New(m, tokenizer.Bytes{}, nil, bundle.Generation{}, "test model")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mixed is harnesses.Mixed in the byte model's tokens, which the weight
// phase trains on.
func mixed(t *testing.T, dom data.Domain) policy.Policy {
	t.Helper()
	tmpl, err := chat.NewTemplate(tokenizer.Bytes{})
	if err != nil {
		t.Fatal(err)
	}
	return chat.Tokenize(harnesses.NewMixed(dom, 2), tmpl)
}

func openDB(t *testing.T) *store.DB {
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func events(t *testing.T, db *store.DB, run string) []Event {
	var out []Event
	err := db.Events(run, 0, func(seq uint64, b []byte) error {
		var ev Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return err
		}
		ev.Seq = seq
		out = append(out, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runFresh starts run id under cfg in a new store and runs it to the end.
func runFresh(t *testing.T, cfg Config, id string) (Summary, *Engine, *store.DB) {
	t.Helper()
	db := openDB(t)
	sum, e := runIn(t, cfg, testEnv(t, db), id)
	return sum, e, db
}

// runIn starts run id under cfg in env and runs it to the end.
func runIn(t *testing.T, cfg Config, env Env, id string) (Summary, *Engine) {
	t.Helper()
	e, err := New(cfg, env, id)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sum, e
}

// resumeMatches resumes run id in env (a new process) and runs it to the
// end: its summary must be want, byte for byte.
func resumeMatches(t *testing.T, env Env, id string, want Summary, what string) {
	t.Helper()
	c, err := Resume(env, kernels.NewCPU(), id)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got, err := c.Run(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if a, b := mustJSON(want), mustJSON(got); !bytes.Equal(a, b) {
		t.Fatalf("%s: resumed summary differs\n%s\n%s", what, a, b)
	}
}

func tinyConfig(t *testing.T) Config {
	cfg, err := Preset("tiny", "math")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestRunAndResumeAreBitIdentical(t *testing.T) {
	ctx := context.Background()
	cfg := tinyConfig(t)

	t0 := time.Now()
	sumA, a, dbA := runFresh(t, cfg, "run")
	took := time.Since(t0)
	if r, err := dbA.GetRun("run"); err != nil || r.Compute <= 0 || r.Compute > took {
		t.Fatalf("stored compute time %v (%v), want in (0, %v], the wall time of the run", r.Compute, err, took)
	}
	if len(sumA.Phases) != 4 || sumA.Rounds != 2 {
		t.Fatalf("tiny run: %d phases, %d rounds; want 4 phases over 2 rounds\n%+v", len(sumA.Phases), sumA.Rounds, sumA)
	}
	for i, p := range sumA.Phases {
		want := PhaseWeights
		if i%2 == 1 {
			want = PhaseHarness
		}
		if p.Kind != want {
			t.Fatalf("phase %d is %s, want %s", i, p.Kind, want)
		}
	}
	if a.State().Ledger.Train == 0 || a.State().Ledger.Search == 0 || a.State().Ledger.Eval == 0 {
		t.Fatalf("ledger %+v: every purpose should have rollouts", a.State().Ledger)
	}

	stops := []int{2, 7, 11}
	if longtests.Short() {
		stops = []int{7} // mid-run, inside a harness phase
	}
	for _, stopAt := range stops {
		dbB := openDB(t)
		envB := testEnv(t, dbB)
		b, err := New(cfg, envB, "run")
		if err != nil {
			t.Fatal(err)
		}
		saves := 0
		b.stopAfter = func(State) bool { saves++; return saves == stopAt }
		if _, err := b.Run(ctx); !errors.Is(err, errStopped) {
			t.Fatalf("stop at %d: %v", stopAt, err)
		}
		stopped, err := dbB.GetRun("run")
		if err != nil || stopped.Compute <= 0 {
			t.Fatalf("stop at %d: compute time %v (%v) of the work saved before the stop, want > 0", stopAt, stopped.Compute, err)
		}
		// A new process: fresh model, fresh policy, same store.
		envC := testEnv(t, dbB)
		envC.Bundle = nil // rebuilt from the stored configuration
		resumeMatches(t, envC, "run", sumA, fmt.Sprintf("stop at %d", stopAt))
		if r, _ := dbB.GetRun("run"); r.Compute <= stopped.Compute {
			t.Fatalf("stop at %d: compute time %v after the resumed run, %v before it: the second process's time was not added", stopAt, r.Compute, stopped.Compute)
		}
		evA, evC := events(t, dbA, "run"), withoutResumed(events(t, dbB, "run"))
		if len(evA) != len(evC) {
			t.Fatalf("stop at %d: %d events uninterrupted, %d resumed", stopAt, len(evA), len(evC))
		}
		for i := range evA {
			if evA[i].Kind != evC[i].Kind || !bytes.Equal(evA[i].Data, evC[i].Data) {
				t.Fatalf("stop at %d: event %d: %s vs %s", stopAt, i, evA[i].Kind, evC[i].Kind)
			}
		}
	}
}

func TestControlCommandsAreJournaledAndApplied(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "ctl")
	if err != nil {
		t.Fatal(err)
	}
	e.Send(Command{Kind: "force"})
	e.Send(Command{Kind: "freeze", Target: "parse_action"})
	e.Send(Command{Kind: "prune", Target: e.State().Archive.Incumbent}) // refused: the incumbent
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Phases[0].Forced || sum.Phases[0].Steps != 0 {
		t.Fatalf("forced first phase: %+v", sum.Phases[0])
	}
	if !e.State().Archive.Frozen["parse_action"] {
		t.Fatal("freeze not applied")
	}
	for _, ent := range e.State().Archive.Entries {
		if ent.Mechanism != "" && ent.Mechanism[:len("parse_action")] == "parse_action" {
			t.Fatalf("frozen knob was mutated: %s", ent.Mechanism)
		}
	}
	var kinds []string
	var refused bool
	db.Control("ctl", func(_ uint64, b []byte) error {
		var j JournaledCommand
		json.Unmarshal(b, &j)
		kinds = append(kinds, j.Kind)
		refused = refused || (j.Kind == "prune" && j.Error != "")
		return nil
	})
	if len(kinds) != 3 || !refused {
		t.Fatalf("journal %v (prune refused: %v)", kinds, refused)
	}
}

// Time a run spends paused is not in its compute time.
func TestPausedTimeIsNotComputeTime(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "paused")
	if err != nil {
		t.Fatal(err)
	}
	const pause = time.Second
	sub := e.Subscribe(1 << 16)
	e.Send(Command{Kind: "pause"})
	go func() {
		for range sub.Ready() {
			evs, _ := sub.Drain()
			for _, ev := range evs {
				if ev.Kind == EvControl { // the pause is applied: the engine waits
					time.Sleep(pause)
					e.Send(Command{Kind: "resume"})
					return
				}
			}
		}
	}()
	t0 := time.Now()
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	if r, err := db.GetRun("paused"); err != nil || r.Compute <= 0 || r.Compute > took-pause {
		t.Fatalf("compute time %v (%v) of a run that took %v with %v paused: want in (0, %v]", r.Compute, err, took, pause, took-pause)
	}
}

func TestConfigValidation(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.Operator = "ppo"
	if err := cfg.Validate(); err == nil {
		t.Fatal("operator ppo accepted")
	}
	cfg = tinyConfig(t)
	cfg.Budget, cfg.MaxRounds = 0, 0
	if err := cfg.Validate(); err == nil {
		t.Fatal("a run without budget or rounds accepted")
	}
	_ = data.SplitVal
}

func withoutResumed(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind != EvRunResumed {
			out = append(out, e)
		}
	}
	return out
}

// A command journaled after the last resume point (the process died
// before saving again) is applied when the run resumes.
func TestResumeReplaysJournaledCommands(t *testing.T) {
	cfg := tinyConfig(t)
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "j")
	if err != nil {
		t.Fatal(err)
	}
	saves := 0
	e.stopAfter = func(State) bool { saves++; return saves == 3 }
	if _, err := e.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatal(err)
	}
	if _, err := db.AppendControl("j", mustJSON(JournaledCommand{Command: Command{Kind: "freeze", Target: "MAX_TURNS"}})); err != nil {
		t.Fatal(err)
	}
	env := testEnv(t, db)
	env.Bundle = nil
	r, err := Resume(env, kernels.NewCPU(), "j")
	if err != nil {
		t.Fatal(err)
	}
	if !r.State().Archive.Frozen["MAX_TURNS"] {
		t.Fatal("a journaled freeze was not replayed on resume")
	}
	if r.State().ControlApplied != 1 {
		t.Fatalf("control applied %d, want 1", r.State().ControlApplied)
	}
}

func TestExportCheckpoint(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "x")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	files, err := ExportCheckpoint(db, sum.BestCkpt, dir, "F32", ExportWhale, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, meta, err := ckpt.LoadModel(files[0], kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if meta["whale.run"] != "x" || m.Config != testModel {
		t.Fatalf("exported model metadata %v / config %+v", meta, m.Config)
	}
	man, _ := ReadCheckpoint(db, sum.BestCkpt)
	blob, _ := db.GetBlob(man.Weights)
	want, got := bytesf32(blob), m.ParamValues()
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("exported parameter %d = %v, stored %v", i, got[i], want[i])
		}
	}
	if _, err := ExportCheckpoint(db, "x/nope", dir, "F32", ExportWhale, 0); err == nil {
		t.Fatal("exporting a missing checkpoint succeeded")
	}
	// GGUF: the same weights for llama.cpp (its content is ckpt's test).
	gdir := filepath.Join(t.TempDir(), "gguf")
	gfiles, err := ExportCheckpoint(db, sum.BestCkpt, gdir, "BF16", ExportGGUF, 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(gfiles[0])
	if err != nil || filepath.Base(gfiles[0]) != "model.gguf" || len(g) < 8 || string(g[:4]) != "GGUF" || binary.LittleEndian.Uint32(g[4:]) != 3 {
		t.Fatalf("GGUF export %v: %d bytes, %v", gfiles, len(g), err)
	}
	if _, err := ExportCheckpoint(db, sum.BestCkpt, gdir, "F32", "onnx", 0); err == nil || !strings.Contains(err.Error(), "onnx") {
		t.Fatalf("unknown export format: %v", err)
	}
}

// cacheReleases wraps a run's policy with a ReleaseCaches that counts
// the engine's calls and the activations the model held at each.
type cacheReleases struct {
	*chat.Tokenized
	m     *model.Model
	calls int
	held  int64
}

func (c *cacheReleases) ReleaseCaches() error {
	c.calls++
	c.held += c.m.ActivationBytes()
	return nil
}

// TestWeightStepsTakeTurnsWithTheMemory: before every weight step the
// engine frees the policy's kept caches, and after it the training
// activations, so the two are never held at once; the run's summary is
// that of the same run without the release (its policy has no
// ReleaseCaches). (What
// chat.Local's ReleaseCaches frees: TestReleaseCachesFreesWhatTheSamplerKeeps.)
func TestWeightStepsTakeTurnsWithTheMemory(t *testing.T) {
	cfg := tinyConfig(t)
	db := openDB(t)
	env := testEnv(t, db)
	rel := &cacheReleases{Tokenized: env.Policy.(*chat.Tokenized), m: env.Bundle.Model}
	env.Policy = rel
	got, _ := runIn(t, cfg, env, "turns")
	steps, trained := 0, 0
	for _, ev := range events(t, db, "turns") {
		if ev.Kind == EvWeightStep {
			var d WeightStepData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			steps++
			trained += d.Stats.Trained
		}
	}
	if steps == 0 || trained == 0 || rel.calls != steps {
		t.Fatalf("%d cache releases for %d weight steps (%d samples trained)", rel.calls, steps, trained)
	}
	if rel.held != 0 || env.Bundle.Model.ActivationBytes() != 0 {
		t.Fatalf("activations held at a release: %d bytes in all; after the run: %d", rel.held, env.Bundle.Model.ActivationBytes())
	}
	want, _, _ := runFresh(t, cfg, "turns")
	if a, b := mustJSON(want), mustJSON(got); !bytes.Equal(a, b) {
		t.Fatalf("summaries differ\n%s\n%s", a, b)
	}
}

// TestActivationBudgetChangesNoResult: a run whose weight steps recompute
// every layer but the last (a budget below any layout) ends exactly as the
// run that keeps them all.
func TestActivationBudgetChangesNoResult(t *testing.T) {
	cfg := tinyConfig(t)
	run := func(budget int64) Summary {
		db := openDB(t)
		env := testEnv(t, db)
		mc := testModel
		mc.NumHiddenLayers = 3
		m, err := model.New(mc, kernels.NewCPU(), 5)
		if err != nil {
			t.Fatal(err)
		}
		env.Bundle, env.ActivationBytes = byteBundle(t, m), budget
		sum, _ := runIn(t, cfg, env, "budget")
		return sum
	}
	want, got := run(-1), run(1)
	if a, b := mustJSON(want), mustJSON(got); !bytes.Equal(a, b) {
		t.Fatalf("summaries differ\n%s\n%s", a, b)
	}
}
