package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalizeText(t *testing.T) {
	cases := map[string]string{
		"The Thoas River.":  "thoas river",
		"  an   Apple!! ":   "apple",
		"1,234":             "1234",
		"Jean-Luc Picard":   "jean luc picard",
		"A":                 "a", // only an article: kept
		"the":               "the",
		"Sea of Fesam":      "sea of fesam",
		"ÉCOLE":             "école",
		"$5":                "5",
		"tab\tand\nnewline": "tab and newline",
	}
	for in, want := range cases {
		if got := NormalizeText(in); got != want {
			t.Errorf("NormalizeText(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalizeText(f *testing.F) {
	for _, s := range []string{"The Thoas River.", "a an the", "1,234", "\xff", "Jean-Luc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k := NormalizeText(s)
		if NormalizeText(k) != k {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, k, NormalizeText(k))
		}
		if strings.Contains(k, "  ") || strings.TrimSpace(k) != k {
			t.Fatalf("white space left in %q", k)
		}
	})
}

func TestScanLines(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.jsonl")
	body := "a\n\n  \nbad\r\n" + strings.Repeat("x", MaxLineBytes+10) + "\nlast"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []int
	decode := func(line int, text []byte) *BadLine {
		seen = append(seen, line)
		if string(text) == "bad" {
			return &BadLine{Field: "f", Reason: "is bad"}
		}
		return nil
	}
	bad, err := ScanLines(p, true, decode)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != 2 || bad[0].Line != 4 || bad[0].Field != "f" || bad[0].File != p || bad[1].Line != 5 || !strings.Contains(bad[1].Reason, "longer") {
		t.Fatalf("bad lines %+v", bad)
	}
	if len(seen) != 3 || seen[0] != 1 || seen[1] != 4 || seen[2] != 6 {
		t.Fatalf("decoded lines %v, want 1 4 6", seen)
	}
	seen = nil
	_, err = ScanLines(p, false, decode)
	if err == nil || err.Error() != p+":4: field f: is bad" {
		t.Fatalf("error %v", err)
	}
	if _, err := ScanLines(filepath.Join(dir, "missing"), false, decode); err == nil {
		t.Fatal("missing file read")
	}
}

func TestDecodeFields(t *testing.T) {
	m, b := DecodeObject([]byte(`{"s": "x", "n": 5, "e": "  ", "z": null}`))
	if b != nil {
		t.Fatal(b)
	}
	if s, b := StringField(m, "s"); b != nil || s != "x" {
		t.Fatal(s, b)
	}
	if _, b := StringField(m, "n"); b == nil || b.Field != "n" || !strings.Contains(b.Reason, "a number") {
		t.Fatal(b)
	}
	if _, b := StringField(m, "e"); b == nil || b.Reason != "empty" {
		t.Fatal(b)
	}
	if _, b := StringField(m, "missing"); b == nil || b.Reason != "missing" {
		t.Fatal(b)
	}
	if s, b := OptionalStringField(m, "n"); b != nil || s != "5" {
		t.Fatal(s, b)
	}
	if s, b := OptionalStringField(m, "z"); b != nil || s != "" {
		t.Fatal(s, b)
	}
	for _, in := range []string{`[1]`, `null`, `{`, `"s"`} {
		if _, b := DecodeObject([]byte(in)); b == nil {
			t.Errorf("DecodeObject(%s) accepted", in)
		}
	}
}

func TestImportSizes(t *testing.T) {
	if s := ImportSizes(Sizes{}, 10000); s.Total() != 10000 || s.Val != 256 || s.Test != 512 {
		t.Fatalf("large file: %+v", s)
	}
	if s := ImportSizes(Sizes{}, 100); s.Total() > 100 || s.Val == 0 {
		t.Fatalf("small file: %+v", s)
	}
	want := Sizes{Train: 1, Val: 1, Audit: 1, Test: 1}
	if s := ImportSizes(want, 100); s != want {
		t.Fatalf("explicit sizes changed: %+v", s)
	}
}

func TestHashTasks(t *testing.T) {
	a := []Task{{ID: "1", Problem: "p", Answer: "a", Hidden: map[string]string{"y": "1", "x": "2"}}}
	b := []Task{{ID: "1", Problem: "p", Answer: "a", Hidden: map[string]string{"x": "2", "y": "1"}}}
	if HashTasks(a) != HashTasks(b) {
		t.Fatal("hash depends on map order")
	}
	b[0].Answer = "b"
	if HashTasks(a) == HashTasks(b) {
		t.Fatal("hash ignores the answer")
	}
}
