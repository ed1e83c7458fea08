package engine

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"whale/data"
)

func TestProgressETA(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Progress{Done: 10, Total: 40, Since: t0}
	if eta, ok := p.ETA(t0.Add(20 * time.Second)); !ok || eta != 60*time.Second {
		t.Fatalf("ETA = %v %v, want 1m0s (10 done in 20s, 30 to go)", eta, ok)
	}
	// Before the first rollout is done: the last such work's time.
	if eta, ok := (Progress{Total: 40, Since: t0, Last: 50 * time.Second}).ETA(t0.Add(20 * time.Second)); !ok || eta != 30*time.Second {
		t.Fatalf("ETA from the last run = %v %v, want 30s", eta, ok)
	}
	for _, q := range []Progress{{Done: 0, Total: 40, Since: t0}, {Done: 40, Total: 40, Since: t0}} {
		if _, ok := q.ETA(t0.Add(time.Second)); ok {
			t.Fatalf("ETA of %+v should be unknown", q)
		}
	}
}

// The snapshot names the work in flight and counts its rollouts, and
// carries the ledger of the last event; reading it while the run runs
// is safe (go test -race).
func TestProgressFollowsTheRun(t *testing.T) {
	cfg := tinyConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "prog")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	seen := map[string]bool{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p := e.Progress()
			if p.Total > 0 && p.Done <= p.Total {
				seen[p.What] = true
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var atStep []Progress
	e.stopAfter = func(st State) bool {
		atStep = append(atStep, e.Progress())
		return false
	}
	if _, err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	if len(atStep) == 0 {
		t.Fatal("no step ran")
	}
	for _, p := range atStep {
		if p.What == "" || p.Total == 0 || p.Done != p.Total {
			t.Fatalf("progress after a step %+v: want finished work named", p)
		}
	}
	if got, want := e.Progress().Ledger, e.State().Ledger; got != want {
		t.Fatalf("progress ledger %+v, want the run's %+v", got, want)
	}
	if !seen["val evaluation"] && !seen["weight-step rollouts"] {
		t.Fatalf("the poller saw no named work: %v", seen)
	}
}

// Gold's func answers for every split's tasks and holds no engine: a
// bench dashboard keeps it for a finished run's row, and an engine kept
// reachable there kept its model, samplers and caches (187 MB on the
// small preset) for the rest of the bench.
func TestGoldHoldsNoEngine(t *testing.T) {
	cfg := tinyConfig(t)
	e, err := New(cfg, testEnv(t, openDB(t)), "gold")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, ts := range [][]data.Task{e.train, e.val, e.test} {
		for _, task := range ts {
			want[task.ID] = task.Answer
		}
	}
	if len(want) == 0 {
		t.Fatal("the run holds no tasks")
	}
	gold := e.Gold()
	alive := weak.Make(e)
	e = nil
	for i := 0; i < 5 && alive.Value() != nil; i++ {
		runtime.GC()
	}
	if alive.Value() != nil {
		t.Fatal("the engine stays reachable through its Gold func")
	}
	for id, a := range want {
		if got, ok := gold(id); !ok || got != a {
			t.Fatalf("gold(%q) = %q %v, want %q", id, got, ok, a)
		}
	}
	if got, ok := gold("no such task"); ok {
		t.Fatalf("gold of an unknown task = %q, true", got)
	}
}
