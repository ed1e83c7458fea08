package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"whale/core/engine"
	"whale/internal/longtests"
)

func TestPrintedCommandsNameTheWorkspace(t *testing.T) {
	for _, tc := range []struct{ db, want string }{
		{"whale.db", "'whale resume r1 --headless' or 'whale tui --run r1'"},
		{"./whale.db", "'whale resume r1 --headless' or 'whale tui --run r1'"},
		{"/tmp/b.db", "'whale resume r1 --headless --db /tmp/b.db' or 'whale tui --run r1 --db /tmp/b.db'"},
		{"my runs/x.db", `'whale resume r1 --headless --db "my runs/x.db"' or 'whale tui --run r1 --db "my runs/x.db"'`},
	} {
		if got := resumeHint("r1", tc.db); got != tc.want {
			t.Errorf("resumeHint(%q) = %s, want %s", tc.db, got, tc.want)
		}
	}
	if got := showHint("r1", "/tmp/b.db"); got != "'whale show r1 --db /tmp/b.db'" {
		t.Errorf("showHint = %s", got)
	}
}

// Ctrl-C on a headless run stops it at a resume point: the command exits
// 0 after its message, and the resume command it prints names the
// workspace, so it runs as printed.
func TestInterruptedHeadlessRunExitsCleanlyWithARunnableHint(t *testing.T) {
	longtests.SkipShort(t, "runs the tiny preset for a few seconds")
	db := filepath.Join(t.TempDir(), "w.db")
	root := newRoot()
	var out bytes.Buffer
	errb := &syncBuffer{}
	root.SetOut(&out)
	root.SetErr(errb)
	root.SetArgs([]string{"run", "--headless", "--domain", "math", "--preset", "tiny", "--db", db})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Stop once the run has begun (its first line is printed).
		for !strings.Contains(errb.String(), "run ") {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("interrupted run returned %v (exit status 1); stderr:\n%s", err, errb.String())
	}
	if !regexp.MustCompile(`continue with 'whale resume \S+ --headless --db ` + regexp.QuoteMeta(db) + `'`).MatchString(errb.String()) {
		t.Fatalf("no runnable resume hint in:\n%s", errb.String())
	}
	// 'whale show' of the stopped run names the workspace in its hint too.
	id := regexp.MustCompile(`whale resume (\S+) --headless`).FindStringSubmatch(errb.String())[1]
	shown, err := runWhale(t, "show", id, "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if want := "resumable: whale resume " + id + " --headless --db " + db + "\n"; !strings.Contains(shown, want) {
		t.Errorf("show's hint: want %q in:\n%s", want, shown)
	}
}

// syncBuffer is a bytes.Buffer that a command writes while a test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A headless run's lines say the budget used and left per ledger, and the
// bar names the work in flight with its ETA.
func TestHeadlessLinesShowLedgerAndWork(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := engine.Progress{What: "val evaluation", Done: 8, Total: 32, Since: t0, Budget: 200, Ledger: engine.Ledger{TrainCalls: 64, SearchCalls: 48, EvalCalls: 30}}
	if got, want := progressLedger(p), "ledger: training 64, search 48 model calls (budget 200: 112 used, 88 left); evaluation 30 apart"; got != want {
		t.Errorf("progressLedger = %q, want %q", got, want)
	}
	if got, want := workText(p, t0.Add(16*time.Second)), "  val evaluation 8/32, ETA 48s  budget 88 left"; got != want {
		t.Errorf("workText = %q, want %q", got, want)
	}
	// Under the paper's two ledgers (the small preset) each is named with
	// its limit and what is left of it.
	p.Budget, p.TrainCalls, p.SearchCalls = 0, 5760, 6144
	if got, want := progressLedger(p), "ledger: training 64 of 5760, search 48 of 6144, sum 112; evaluation 30 apart"; got != want {
		t.Errorf("two ledgers: progressLedger = %q, want %q", got, want)
	}
	if got, want := workText(p, t0.Add(16*time.Second)), "  val evaluation 8/32, ETA 48s  training 5696 left, search 6096 left"; got != want {
		t.Errorf("two ledgers: workText = %q, want %q", got, want)
	}
}
