package chess

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"whale/data"
	"whale/internal/longtests"
)

var update = flag.Bool("update", false, "regenerate the committed splits in splits/")

func longTests(t *testing.T) {
	t.Helper()
	longtests.Skip(t, "generates and checks chess puzzles for minutes")
}

// checkSplits asserts the splits have the asked sizes, hold no position
// twice, mix both levels in every split, and that every task validates.
func checkSplits(t *testing.T, splits map[string][]data.Task, sizes data.Sizes) {
	t.Helper()
	want := map[string]int{data.SplitTrain: sizes.Train, data.SplitVal: sizes.Val, data.SplitAudit: sizes.Audit, data.SplitTest: sizes.Test}
	seen := map[string]string{}
	for _, name := range data.Splits {
		tasks := splits[name]
		if len(tasks) != want[name] {
			t.Errorf("split %s has %d tasks, want %d", name, len(tasks), want[name])
		}
		levels := map[int]int{}
		for _, task := range tasks {
			if err := ValidateTask(task); err != nil {
				t.Fatal(err)
			}
			p, _ := ParseFEN(task.Hidden[HiddenStartFEN])
			if prev, ok := seen[p.key()]; ok {
				t.Errorf("position %s in %s and %s", p.key(), prev, name)
			}
			seen[p.key()] = name
			levels[task.Level]++
		}
		if len(tasks) >= 2 && (levels[1] != len(tasks)-len(tasks)/2 || levels[2] != len(tasks)/2) {
			t.Errorf("split %s levels %v, want half mate-in-1 and half mate-in-2", name, levels)
		}
	}
}

func TestGenerateDeterministicAndDisjoint(t *testing.T) {
	sizes := data.Sizes{Train: 10, Val: 4, Audit: 3, Test: 4}
	calls := 0
	a, err := Generate(11, sizes, func(done, total int) {
		calls++
		if done > total || total != sizes.Total() {
			t.Errorf("progress %d of %d", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("progress never called")
	}
	checkSplits(t, a, sizes)
	b, err := Generate(11, sizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Generate(12, sizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	da, db := t.TempDir(), t.TempDir()
	if err := WriteSplits(da, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteSplits(db, b); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.jsonl", "val.jsonl", "audit.jsonl", "test.jsonl", ManifestFile} {
		x, _ := os.ReadFile(filepath.Join(da, f))
		y, _ := os.ReadFile(filepath.Join(db, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with one seed (or is empty)", f)
		}
	}
	if a[data.SplitVal][0].Hidden[HiddenStartFEN] == c[data.SplitVal][0].Hidden[HiddenStartFEN] {
		t.Error("seeds 11 and 12 gave the same first val puzzle")
	}
	got, m, err := ReadSplits(da)
	if err != nil {
		t.Fatal(err)
	}
	if m.Seed == nil || *m.Seed != 11 || m.Sizes != sizes {
		t.Errorf("manifest seed %v sizes %+v, want 11 and %+v", m.Seed, m.Sizes, sizes)
	}
	for _, name := range data.Splits {
		for i := range got[name] {
			if got[name][i].ID != a[name][i].ID || got[name][i].Hidden[HiddenLine] != a[name][i].Hidden[HiddenLine] {
				t.Fatalf("split %s task %d did not survive WriteSplits/ReadSplits", name, i)
			}
		}
	}
	d, err := NewDomain(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range data.Splits {
		for _, task := range got[name] {
			if r := replayGold(t, d, task); r != 1 {
				t.Errorf("gold replay of %s: reward %v", task.ID, r)
			}
		}
	}
}

func TestReadSplitsCatchesEdits(t *testing.T) {
	splits, err := Generate(3, data.Sizes{Train: 2, Val: 2, Audit: 2, Test: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteSplits(dir, splits); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "val.jsonl")
	b, _ := os.ReadFile(f)
	os.WriteFile(f, append(b, '\n'), 0o644)
	if _, _, err := ReadSplits(dir); err == nil || !bytes.Contains([]byte(err.Error()), []byte("val.jsonl")) {
		t.Errorf("an edited split loaded, or the error does not name it: %v", err)
	}
}

// TestBuiltinReproduces regenerates the committed splits (the ladder set)
// from their seed
// and asserts identical bytes; with -update it rewrites them instead.
func TestBuiltinReproduces(t *testing.T) {
	if !*update {
		longTests(t)
	}
	start := time.Now()
	splits, err := GenerateLadder(BuiltinSeed, BuiltinSizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d puzzles in %v", BuiltinSizes.Total(), time.Since(start))
	if *update {
		if err := WriteSplits("splits", splits); err != nil {
			t.Fatal(err)
		}
		return
	}
	dir := t.TempDir()
	if err := WriteSplits(dir, splits); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"train.jsonl", "val.jsonl", "audit.jsonl", "test.jsonl", ManifestFile} {
		got, _ := os.ReadFile(filepath.Join(dir, f))
		want, err := builtinFS.ReadFile("splits/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("regenerated %s differs from the committed one", f)
		}
	}
}

func TestBuiltin(t *testing.T) {
	d, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	splits := map[string][]data.Task{}
	for _, name := range data.Splits {
		splits[name], err = d.Tasks(name)
		if err != nil {
			t.Fatal(err)
		}
	}
	if d.Name() != Name || len(d.Tools()) != 1 || d.Tools()[0].Name() != AttacksTool || d.DefaultMaxTurns() != builtinMaxTurns {
		t.Errorf("name %q, %d tools, %d turns", d.Name(), len(d.Tools()), d.DefaultMaxTurns())
	}
	if _, err := d.Tasks("nope"); err == nil {
		t.Error("unknown split accepted")
	}
	// Every committed task with WHALE_LONG_TESTS, a sample otherwise.
	step := 23
	if longtests.Enabled() {
		step = 1
	}
	checkLadder(t, d, splits, BuiltinSizes, step)
}

func BenchmarkGenerate64(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(5, data.Sizes{Train: 40, Val: 8, Audit: 8, Test: 8}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
