package domains

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"whale/data"
)

func TestOpenEveryDomain(t *testing.T) {
	for _, name := range Names() {
		d, err := Open(name, 1)
		if err != nil {
			t.Fatalf("Open(%s): %v", name, err)
		}
		if d.Name() != name || d.DefaultMaxTurns() < 1 {
			t.Fatalf("Open(%s) gave %s with %d turns", name, d.Name(), d.DefaultMaxTurns())
		}
		// Gold replay on the first tasks of every split.
		for _, sp := range data.Splits {
			ts, err := d.Tasks(sp)
			if err != nil || len(ts) == 0 {
				t.Fatalf("%s %s: %d tasks, %v", name, sp, len(ts), err)
			}
			for _, task := range ts[:min(5, len(ts))] {
				if res, _, err := data.ReplayGold(d, task); err != nil || res.Reward != 1 {
					t.Fatalf("%s %s: gold replay %+v %v", name, task.ID, res, err)
				}
			}
		}
	}
	if _, err := Open("poetry", 1); err == nil || !strings.Contains(err.Error(), "math, searchqa, chess") {
		t.Fatalf("unknown domain: %v", err)
	}
}

func TestImportFormats(t *testing.T) {
	cases := []struct{ format, path, domain string }{
		{FormatGSM8K, "../math/testdata/gsm8k_sample.jsonl", "math"},
		{FormatQA, "../searchqa/testdata/questions.jsonl,../searchqa/testdata/corpus.jsonl", "searchqa"},
	}
	for _, c := range cases {
		d, bad, err := Import(c.format, c.path, data.ImportOptions{Seed: 1})
		if err != nil || len(bad) != 0 || d.Name() != c.domain {
			t.Fatalf("Import(%s): %v %v", c.format, err, bad)
		}
		if dom, ok := FormatDomain(c.format); !ok || dom != c.domain {
			t.Fatalf("FormatDomain(%s) = %s", c.format, dom)
		}
	}
	if _, _, err := Import(FormatQA, "only-questions.jsonl", data.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "QUESTIONS.jsonl,CORPUS.jsonl") {
		t.Fatalf("qa without a corpus: %v", err)
	}
	if _, _, err := Import("csv", "x", data.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "gsm8k, lichess, qa, splits") {
		t.Fatalf("unknown format: %v", err)
	}
}

func TestGenerateReadSplitsRoundTrip(t *testing.T) {
	for _, name := range []string{"math", "searchqa"} {
		dir := t.TempDir()
		m, err := Generate(name, 5, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.Sizes != data.DefaultSizes || *m.Seed != 5 {
			t.Fatalf("%s manifest %+v", name, m)
		}
		again := t.TempDir()
		if _, err := Generate(name, 5, again, nil); err != nil {
			t.Fatal(err)
		}
		other := t.TempDir()
		m3, _ := Generate(name, 6, other, nil)
		for i, f := range m.Files {
			a, _ := os.ReadFile(filepath.Join(dir, f.File))
			b, _ := os.ReadFile(filepath.Join(again, f.File))
			if string(a) != string(b) {
				t.Fatalf("%s %s differs between two runs with one seed", name, f.File)
			}
			if m3.Files[i].SHA256 == f.SHA256 {
				t.Fatalf("%s %s is the same for seeds 5 and 6", name, f.File)
			}
		}
		d, err := ReadSplits(dir)
		if err != nil {
			t.Fatal(err)
		}
		orig, _ := Open(name, 5)
		for _, sp := range data.Splits {
			got, _ := d.Tasks(sp)
			want, _ := orig.Tasks(sp)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %s: read back differs", name, sp)
			}
			for _, task := range got[:3] {
				if res, _, err := data.ReplayGold(d, task); err != nil || res.Reward != 1 {
					t.Fatalf("read-back replay %+v %v", res, err)
				}
			}
		}
		// A changed byte is caught by the hash.
		f := filepath.Join(dir, m.Files[0].File)
		b, _ := os.ReadFile(f)
		b[10] ^= 1
		os.WriteFile(f, b, 0o644)
		if _, err := ReadSplits(dir); err == nil || !strings.Contains(err.Error(), "sha256") {
			t.Fatalf("%s: edited split read without error: %v", name, err)
		}
	}
}
