package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/engine"
)

// A harness-only run over a pool named by a --policy-urls file samples
// from both servers, and 'whale show' gives each server's figures.
func TestARunOverAPoolFromAURLsFileShowsEachServer(t *testing.T) {
	a, b := newAnsweringServer(t, "<answer>3</answer>"), newAnsweringServer(t, "<answer>4</answer>")
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.txt")
	if err := os.WriteFile(file, []byte("# two replicas\n"+a.url+"\n\n"+b.url+"   # the second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "w.db")
	out, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--condition", "harness-only",
		"--budget", "24", "--proposer", "mutation", "--db", db, "--policy-urls", file, "--policy-model", "served", "--policy-concurrency", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum engine.Summary
	lastJSONLine(t, out, &sum)
	na, _, _ := a.counts()
	nb, _, _ := b.counts()
	if na == 0 || nb == 0 || na+nb != sum.ModelCalls+sum.EvalCalls {
		t.Errorf("servers answered %d and %d choices; the run counts %d + %d", na, nb, sum.ModelCalls, sum.EvalCalls)
	}
	show, err := runWhale(t, "show", sum.RunID, "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server " + a.url + ": ", "server " + b.url + ": ", " errors, "} {
		if !strings.Contains(show, want) {
			t.Errorf("whale show lacks %q:\n%s", want, show)
		}
	}
	cfg, err := runWhale(t, "show", sum.RunID, "--db", db, "--config")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cfg, `policy-url = ["`+a.url+`", "`+b.url+`"]`) {
		t.Errorf("the run's config file does not list both servers:\n%s", cfg)
	}
}

// A bad line of a --policy-urls file is a usage error naming the file
// and the line.
func TestABadURLsFileNamesItsLine(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ text, want string }{
		{"http://a:1/v1\nftp://b/v1\n", "fleet.txt:2: \"ftp://b/v1\" is not an http(s) URL"},
		{"# only a comment\n", "names no server"},
		{"http://a:1/v1 http://b:1/v1\n", "fleet.txt:1: "},
		{"http://user:pw@a:1/v1\n", "fleet.txt:1: the URL holds credentials"},
	} {
		file := filepath.Join(dir, "fleet.txt")
		if err := os.WriteFile(file, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--policy-urls", file, "--policy-model", "m")
		if !isUsage(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error saying %q", c.text, err, c.want)
		}
	}
}

// FuzzReadURLs: a --policy-urls file either gives http(s) URLs without
// credentials, spaces or commas, or an error naming the file.
func FuzzReadURLs(f *testing.F) {
	f.Add("# fleet\nhttp://a:8000/v1\n\nhttps://b/v1 # second\n")
	f.Add("ftp://x\n")
	f.Add("http://u:p@h/v1\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "urls.txt")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		urls, err := readURLs(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v does not name the file", err)
			}
			return
		}
		for _, u := range urls {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") || strings.ContainsAny(u, " \t,#") {
				t.Fatalf("accepted %q", u)
			}
		}
	})
}
