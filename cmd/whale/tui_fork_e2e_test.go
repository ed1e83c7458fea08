package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestWorkbenchForkEndToEnd: r y on a kept checkpoint stops the run
// (resumable or finished, nothing lost), reopens the workbench on a new run
// that says where it came from, and q exits 0.
func TestWorkbenchForkEndToEnd(t *testing.T) {
	s, db, exit := startWorkbench(t, "whale-fork-e2e", "tiny")

	s.waitFor("the run to start", 60*time.Second, func(scr string) bool { return rollouts(scr) > 0 })
	s.keys("4")
	scr := s.waitFor("a kept checkpoint", 120*time.Second, func(scr string) bool { return strings.Contains(scr, "/01-weights") })
	first := ""
	for _, l := range strings.Split(scr, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == ">" {
			first, _, _ = strings.Cut(f[1], "/")
		}
	}
	if first == "" {
		t.Fatalf("no selected checkpoint:\n%s", scr)
	}
	s.keys("r")
	if !strings.Contains(s.screen(), "new run from "+first+"/01-weights?") {
		t.Fatalf("r did not ask to confirm:\n%s", s.screen())
	}
	s.keys("y")
	s.waitFor("the new run's workbench", 60*time.Second, func(scr string) bool {
		return strings.Contains(scr, "from checkpoint "+first+"/01-weights") && rollouts(scr) >= 0
	})
	s.keys("q")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(exit); err == nil && len(b) > 0 {
			if got := strings.TrimSpace(string(b)); got != "0" {
				t.Fatalf("exit status %s, want 0", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("whale did not exit after q:\n%s", s.screen())
		}
		time.Sleep(200 * time.Millisecond)
	}

	out, err := runWhale(t, "runs", "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("runs after a fork: %v\n%s", err, out)
	}
	for _, r := range runs {
		out, err := runWhale(t, "show", r.RunID, "--db", db, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var show struct {
			Status    string `json:"status"`
			Resumable bool   `json:"resumable"`
		}
		if err := json.Unmarshal([]byte(out), &show); err != nil {
			t.Fatal(err)
		}
		if !show.Resumable && show.Status != "finished" {
			t.Errorf("run %s is neither resumable nor finished:\n%s", r.RunID, out)
		}
	}
}
