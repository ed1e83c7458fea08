package main

import (
	"bytes"
	"strings"
	"testing"
)

// Without a terminal, `whale tui` says what it would have done and how to
// run headless, and fails with exit status 1 (not a usage error).
func TestTUINeedsTerminal(t *testing.T) {
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs([]string{"tui", "--db", t.TempDir() + "/w.db", "--domain", "chess"})
	err := root.Execute()
	if err == nil {
		t.Fatal("tui without a terminal succeeded")
	}
	if _, ok := err.(usageError); ok {
		t.Fatalf("tui without a terminal is a usage error (exit 2), want exit 1: %v", err)
	}
	for _, want := range []string{"not a terminal", "new chess run", "whale run --headless --domain chess"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
