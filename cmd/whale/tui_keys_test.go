package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bad keys.toml stops `whale tui` before anything opens: a usage error
// (exit 2) naming the file and the line; a good one lets it go on (here to
// the missing terminal, exit 1).
func TestTUIRefusesABadKeysFile(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	db := filepath.Join(t.TempDir(), "w.db")
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	def := filepath.Join(cfg, "whale", "keys.toml")
	for body, want := range map[string]string{
		"force = \"F\"\nquit = \"F\"\n": `key "F" is bound to both force (` + def + `:1) and quit (` + def + `:2)`,
		"\nfrce = \"F\"\n":              def + ":2: frce: unknown action",
		"force = 3\n":                   def + ":1: force: want a key",
	} {
		write(def, body)
		for _, args := range [][]string{{"tui", "--db", db}, {}} {
			_, err := runWhale(t, args...)
			if err == nil || !isUsage(err) || !strings.Contains(err.Error(), want) {
				t.Errorf("whale %v with %q: %v, want a usage error with %q", args, body, err, want)
			}
		}
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("a bad keys file opened the workspace %s", db)
		}
	}
	// --keys names another file; one that is not there is refused.
	mine := filepath.Join(t.TempDir(), "mine.toml")
	write(mine, "pause = \"?\"\n")
	if _, err := runWhale(t, "tui", "--db", db, "--keys", mine); err == nil || !isUsage(err) || !strings.Contains(err.Error(), mine+":1") || !strings.Contains(err.Error(), "pause") || !strings.Contains(err.Error(), "help") {
		t.Errorf("--keys %s: %v, want a conflict of pause and help at line 1", mine, err)
	}
	if _, err := runWhale(t, "tui", "--db", db, "--keys", mine+".none"); err == nil || !isUsage(err) || !strings.Contains(err.Error(), "--keys") {
		t.Errorf("--keys of a missing file: %v, want a usage error", err)
	}
	write(mine, "force = \"F\"\n")
	if _, err := runWhale(t, "tui", "--db", db, "--keys", mine); err == nil || isUsage(err) || !strings.Contains(err.Error(), "not a terminal") {
		t.Errorf("a good --keys file: %v, want only the missing terminal (exit 1)", err)
	}
}
