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

// A new run of the workbench takes LoRA flags as whale run does: bad ones
// are usage errors before anything opens, and without a terminal the
// headless command it suggests carries them.
func TestTUIStartsLoRARuns(t *testing.T) {
	db := t.TempDir() + "/w.db"
	_, err := runWhale(t, "tui", "--db", db, "--lora-rank", "4", "--lora-targets", "q,v")
	if err == nil || isUsage(err) {
		t.Fatalf("tui --lora-rank 4 without a terminal: %v, want exit 1", err)
	}
	for _, want := range []string{"with LoRA adapters of rank 4", "whale run --headless --domain math --preset small --lora-rank 4 --lora-alpha 8 --lora-targets q,v"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// Every flag that shapes the new run reaches the suggestion.
	_, err = runWhale(t, "tui", "--db", db, "--seed", "7", "--model", "m.safetensors", "--lora-rank", "2", "--lora-bf16-base")
	if err == nil || isUsage(err) {
		t.Fatalf("tui --lora-bf16-base without a terminal: %v, want exit 1", err)
	}
	for _, want := range []string{"rank 2 over a bfloat16 base", "--model m.safetensors --seed 7 --lora-rank 2 --lora-alpha 4 --lora-targets all --lora-bf16-base --db "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	_, err = runWhale(t, "tui", "--db", db, "--sample-bf16")
	if err == nil || isUsage(err) || !strings.Contains(err.Error(), "sampling from bfloat16 weights") ||
		!strings.Contains(err.Error(), "--preset small --sample-bf16 --db ") {
		t.Errorf("tui --sample-bf16 without a terminal: %v, want exit 1 naming the option and passing it on", err)
	}
	for _, args := range [][]string{
		{"tui", "--db", db, "--sample-bf16", "--run", "some-run"},
		{"tui", "--db", db, "--lora-rank", "-2"},
		{"tui", "--db", db, "--lora-alpha", "3"},
		{"tui", "--db", db, "--lora-rank", "2", "--lora-targets", "qq"},
		{"tui", "--db", db, "--lora-rank", "2", "--run", "some-run"},
	} {
		if _, err := runWhale(t, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
