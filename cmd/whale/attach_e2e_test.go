package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"whale/internal/longtests"
)

// liveRun asks the holder of db (through its socket, as `whale runs` does)
// for a run it is running, preferring one that has spent nothing yet;
// "" when none is live.
func liveRun(t *testing.T, db string) string {
	t.Helper()
	out, err := runWhale(t, "runs", "--db", db, "--json")
	if err != nil {
		return ""
	}
	var rows []struct {
		RunID string `json:"run_id"`
		Live  bool   `json:"live"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(out)), &rows) != nil {
		return ""
	}
	fallback := ""
	for _, r := range rows {
		if !r.Live {
			continue
		}
		fallback = r.RunID
		out, err := runWhale(t, "show", r.RunID, "--db", db, "--json")
		var show struct {
			Ledger struct {
				TrainCalls  int `json:"train_calls"`
				SearchCalls int `json:"search_calls"`
			} `json:"ledger"`
		}
		if err == nil && json.Unmarshal([]byte(strings.TrimSpace(out)), &show) == nil && show.Ledger.TrainCalls+show.Ledger.SearchCalls == 0 {
			return r.RunID
		}
	}
	return fallback
}

func waitFile(t *testing.T, path string, limit time.Duration, what string, s tmuxSession) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:\n%s", what, s.screen())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAttachToARunningBench is issue 18's end-to-end check: a tiny bench
// runs in one tmux session with its dashboard; `whale tui --run ID` on the
// same --db in another attaches to one of its running runs, shows the
// timeline advancing, and q leaves the bench running; in the dashboard,
// enter opens a run in the workbench and q comes back.
func TestAttachToARunningBench(t *testing.T) {
	longtests.Skip(t, "drives a tiny bench and an attached workbench in tmux for minutes")
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "bench.db")
	bench := tmuxSession{t: t, name: fmt.Sprintf("whale-bench-%d", os.Getpid())}
	benchExit := filepath.Join(dir, "bench-exit")
	bench.tmux("new-session", "-d", "-s", bench.name, "-x", "160", "-y", "48",
		fmt.Sprintf("cd %q && WHALE_TEST_AS_MAIN=1 %q bench conditions --domain math --preset tiny --seeds 2 --db %q --out %q; echo $? > %q; sleep 60",
			dir, os.Args[0], db, filepath.Join(dir, "results"), benchExit))
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", bench.name).Run() })
	bench.waitFor("the bench dashboard", 60*time.Second, func(scr string) bool { return strings.Contains(scr, "whale bench") })

	var id string
	for deadline := time.Now().Add(120 * time.Second); id == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no run of the bench went live:\n%s", bench.screen())
		}
		id = liveRun(t, db)
	}
	t.Logf("attaching to %s", id)

	tui := tmuxSession{t: t, name: fmt.Sprintf("whale-attach-%d", os.Getpid())}
	tuiExit := filepath.Join(dir, "tui-exit")
	tui.tmux("new-session", "-d", "-s", tui.name, "-x", "80", "-y", "24",
		fmt.Sprintf("cd %q && WHALE_TEST_AS_MAIN=1 %q tui --db %q --run %s; echo $? > %q; sleep 60", dir, os.Args[0], db, id, tuiExit))
	t.Cleanup(func() { exec.Command("tmux", "kill-session", "-t", tui.name).Run() })
	scr := tui.waitFor("the attached workbench", 60*time.Second, func(scr string) bool {
		return strings.Contains(scr, "(owner pid") && rollouts(scr) >= 0
	})
	// A bench's run is read-only to a viewer without --steer (issue 37).
	if !strings.Contains(scr, "attached, read-only ·") {
		t.Fatalf("the footer does not say the workbench is attached read-only to a bench's run:\n%s", scr)
	}
	tui.keys("f")
	tui.waitFor("f refused", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "force refused: run "+id) })
	first := rollouts(scr)
	scr = tui.waitFor("the attached timeline to advance", 300*time.Second, func(scr string) bool { return rollouts(scr) > first })
	t.Logf("attached workbench:\n%s", scr)

	tui.keys("q")
	if got := waitFile(t, tuiExit, 30*time.Second, "the attached workbench did not exit after q", tui); got != "0" {
		t.Fatalf("attached workbench exit status %s, want 0", got)
	}
	// The bench goes on: it still serves its workspace and runs a run.
	if _, err := os.Stat(benchExit); err == nil {
		t.Fatalf("the bench exited when the attached workbench quit:\n%s", bench.screen())
	}
	for deadline := time.Now().Add(120 * time.Second); liveRun(t, db) == ""; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bench runs nothing after the workbench quit:\n%s", bench.screen())
		}
	}
	t.Logf("bench dashboard:\n%s", bench.screen())
	// enter opens the selected run (the first, started first) in the
	// workbench in process; q comes back to the dashboard.
	bench.keys("Enter")
	bench.waitFor("the first run's workbench", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "run bench-math-weight-only-b64-s1") && strings.Contains(scr, "q: back to the bench")
	})
	bench.keys("q")
	bench.waitFor("the dashboard again", 10*time.Second, func(scr string) bool { return strings.Contains(scr, "whale bench") })
	bench.keys("q", "y")
	waitFile(t, benchExit, 120*time.Second, "the bench did not stop after q y", bench)
}
