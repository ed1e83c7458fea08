package attach

import (
	"strings"
	"testing"

	"whale/core/engine"
)

// A bench serves its runs read-only: a viewer's command is refused with a
// sentence that says how to steer, and reaches the engine only when the
// viewer asked to steer.
func TestReadOnlyOwnerTakesCommandsOnlyFromSteeringViewers(t *testing.T) {
	db := openStore(t)
	srv, cl := serve(t, db)
	srv.ServeReadOnly("bench")
	run := newFakeRun(t, db, "r")
	defer srv.Add("r", run)()
	info, err := cl.Run("r")
	if err != nil {
		t.Fatal(err)
	}
	if !info.ReadOnly || info.OwnerKind != "bench" {
		t.Fatalf("run info %+v: want read-only, owned by a bench", info)
	}
	for _, c := range []engine.Command{{Kind: "force"}, {Kind: "prune", Target: "abc"}, {Kind: "pause"}} {
		err := (Control{Client: cl, Run: "r"}).Send(c)
		if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "--steer") {
			t.Fatalf("%s from a viewer: %v; want a refusal naming --steer", c.Kind, err)
		}
	}
	if err := (Control{Client: cl, Run: "r", Steer: true}).Send(engine.Command{Kind: "force"}); err != nil {
		t.Fatal(err)
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if len(run.sent) != 1 || run.sent[0].Kind != "force" {
		t.Fatalf("the engine got %v, want only the steering viewer's force", run.sent)
	}
}

type progressRun struct {
	*fakeRun
	p engine.Progress
}

func (r progressRun) Progress() engine.Progress { return r.p }

// A viewer reads the work in flight of a run the owner runs.
func TestViewerReadsProgress(t *testing.T) {
	db := openStore(t)
	srv, cl := serve(t, db)
	want := engine.Progress{What: "val evaluation", Done: 3, Total: 8, Budget: 64, Ledger: engine.Ledger{TrainCalls: 12}}
	run := progressRun{newFakeRun(t, db, "r"), want}
	if _, err := cl.Progress("r"); err == nil {
		t.Fatal("progress of a run nobody runs was answered")
	}
	defer srv.Add("r", run)()
	got, err := cl.Progress("r")
	if err != nil {
		t.Fatal(err)
	}
	if got.What != want.What || got.Done != 3 || got.Total != 8 || got.Budget != 64 || got.Ledger != want.Ledger {
		t.Fatalf("progress %+v, want %+v", got, want)
	}
}
