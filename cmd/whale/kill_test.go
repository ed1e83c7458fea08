package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"whale/internal/longtests"
)

// TestKillAndResumeMatchesUninterrupted runs a tiny run in a child process,
// SIGKILLs it in the middle, resumes it, and checks that the result equals
// an uninterrupted run's: same weights, harness and metrics. One kill by
// default; with WHALE_LONG_TESTS a second, later one.
func TestKillAndResumeMatchesUninterrupted(t *testing.T) {
	longtests.SkipShort(t, "two tiny runs in child processes")
	kills := []int{5} // progress lines seen before the kill
	if longtests.Enabled() {
		kills = append(kills, 14)
	}
	dir := t.TempDir()
	args := []string{"run", "--headless", "--domain", "math", "--preset", "tiny", "--json"}

	clean, err := runWhale(t, append(args, "--db", filepath.Join(dir, "clean.db"))...)
	if err != nil {
		t.Fatal(err)
	}

	for _, killAfter := range kills {
		db := filepath.Join(dir, "killed.db")
		os.Remove(db)
		child := exec.Command(os.Args[0], append(args, "--db", db)...)
		child.Env = append(os.Environ(), "WHALE_TEST_AS_MAIN=1")
		stderr, err := child.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		runID, lines := "", 0
		for sc.Scan() {
			line := sc.Text()
			if runID == "" && strings.HasPrefix(line, "run ") {
				runID = strings.TrimSuffix(strings.Fields(line)[1], ":")
			}
			if lines++; lines == killAfter {
				child.Process.Signal(syscall.SIGKILL)
				break
			}
		}
		child.Wait()
		if runID == "" || lines < killAfter {
			t.Fatalf("the child finished before the kill (%d lines, run %q)", lines, runID)
		}
		resumed, err := runWhale(t, "resume", runID, "--headless", "--db", db, "--json")
		if err != nil {
			t.Fatalf("resume after SIGKILL at line %d: %v", killAfter, err)
		}
		if a, b := comparable(t, clean), comparable(t, resumed); a != b {
			t.Fatalf("killed at line %d and resumed:\n%s\nuninterrupted:\n%s", killAfter, b, a)
		}
	}
}

// comparable is the summary without what names the run.
func comparable(t *testing.T, out string) string {
	t.Helper()
	var m map[string]any
	lastJSONLine(t, out, &m)
	delete(m, "run_id")
	delete(m, "best_checkpoint")
	b, _ := json.Marshal(m)
	return string(b)
}
