package attach

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"whale/core/engine"
	"whale/core/store"
)

// fakeRun does what an engine does for the server: it stores each event,
// then publishes it to a non-blocking broker, and queues commands.
type fakeRun struct {
	t  testing.TB
	db *store.DB
	id string
	b  *engine.Broker[engine.Event]

	mu   sync.Mutex
	sent []engine.Command
}

func newFakeRun(t testing.TB, db *store.DB, id string) *fakeRun {
	t.Helper()
	if err := db.CreateRun(id, json.RawMessage(`{"domain":"math"}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	return &fakeRun{t: t, db: db, id: id, b: engine.NewBroker[engine.Event]()}
}

func (f *fakeRun) Subscribe(n int) *engine.Subscription[engine.Event] { return f.b.Subscribe(n) }

func (f *fakeRun) Send(c engine.Command) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, c)
	return nil
}

// emit stores and publishes one event whose payload is pad bytes long.
func (f *fakeRun) emit(kind string, step, pad int) {
	f.t.Helper()
	ev := engine.Event{Kind: kind, Step: step}
	if pad > 0 {
		ev.Data, _ = json.Marshal(strings.Repeat("x", pad))
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		f.t.Fatal(err)
	}
	if ev.Seq, err = f.db.AppendEvents(f.id, raw); err != nil {
		f.t.Fatal(err)
	}
	f.b.Publish(ev)
}

func openStore(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func serve(t *testing.T, db *store.DB) (*Server, *Client) {
	t.Helper()
	srv, err := Serve(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cl, err := Dial(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	return srv, cl
}

// drain reads a stream to its end: History, then everything on Sub. It
// may run on a goroutine of its own, so it returns what went wrong.
func drain(st *Stream) ([]engine.Event, error) {
	out := append([]engine.Event(nil), st.History...)
	timeout := time.After(60 * time.Second)
	for {
		select {
		case _, ok := <-st.Sub.Ready():
			evs, dropped := st.Sub.Drain()
			if dropped > 0 {
				return out, fmt.Errorf("the reader's own queue dropped %d events", dropped)
			}
			out = append(out, evs...)
			if !ok {
				return out, nil
			}
		case <-timeout:
			return out, fmt.Errorf("stream did not end; %d events so far", len(out))
		}
	}
}

func collect(t *testing.T, st *Stream) []engine.Event {
	t.Helper()
	evs, err := drain(st)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func checkSeqs(t *testing.T, evs []engine.Event, n int) {
	t.Helper()
	if len(evs) != n {
		t.Fatalf("%d events, want %d", len(evs), n)
	}
	for i, ev := range evs {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has sequence %d, want %d (none missed, none twice)", i, ev.Seq, i+1)
		}
	}
}

func TestSocketPathIsBesideTheDatabaseUnlessTooLong(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "w.db")
	got, err := SocketPath(short)
	if err != nil || got != short+".sock" {
		t.Fatalf("SocketPath(%s) = %q, %v; want the database's path + .sock", short, got, err)
	}
	long := filepath.Join(dir, strings.Repeat("d", 120), "w.db")
	got, err = SocketPath(long)
	if err != nil || filepath.Dir(got) != filepath.Clean(os.TempDir()) || len(got) > maxSocketPath {
		t.Fatalf("SocketPath of a %d-byte path = %q, %v; want a short name in the temporary directory", len(long), got, err)
	}
	wd, _ := os.Getwd()
	t.Chdir(filepath.Dir(long[:len(long)-len("/w.db")]))
	rel, err := SocketPath(filepath.Join(strings.Repeat("d", 120), "w.db"))
	t.Chdir(wd)
	if err != nil || rel != got {
		t.Fatalf("relative path gives %q, absolute %q: every process must find the same socket", rel, got)
	}
}

func TestServeIsPrivateReplacesAStaleSocketAndRefusesALiveOne(t *testing.T) {
	db := openStore(t)
	path, _ := SocketPath(db.Path())
	// A socket left behind by a process that died.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	srv, err := Serve(db)
	if err != nil {
		t.Fatalf("a stale socket was not replaced: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %s: %v, %v; want a socket of mode 0600", path, fi.Mode(), err)
	}
	if _, err := Serve(db); err == nil || !strings.Contains(err.Error(), "already serves") {
		t.Fatalf("a second server on a live socket: %v", err)
	}
	srv.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket outlived its server: %v", err)
	}
	if _, err := Dial(db.Path()); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("Dial with no server: %v, want ErrNoOwner", err)
	}
	if err := os.WriteFile(path, []byte("not a socket"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Serve(db); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("a file in the socket's place: %v", err)
	}
}

func TestReadersFollowALiveRunAndASlowOneNeverBlocksIt(t *testing.T) {
	db := openStore(t)
	srv, cl := serve(t, db)
	run := newFakeRun(t, db, "r")
	for i := range 3 { // stored before anyone watches
		run.emit(engine.EvWeightStep, i, 0)
	}
	remove := srv.Add("r", run)
	// A reader that asks for the events and never reads one.
	slow, err := net.Dial("unix", srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	json.NewEncoder(slow).Encode(request{Op: opEvents, Run: "r"})

	var readers []*Stream
	for range 2 {
		st, err := cl.Follow("r", 0, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Live || len(st.History) != 3 {
			t.Fatalf("live %v with %d stored events, want live with 3", st.Live, len(st.History))
		}
		readers = append(readers, st)
	}
	got := make([][]engine.Event, len(readers))
	errs := make([]error, len(readers))
	var wg sync.WaitGroup
	for i, st := range readers {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], errs[i] = drain(st) }()
	}
	// 300 events of 4 KiB: far more than the slow reader's socket buffers
	// hold, so its stream is stuck in a write while these are published.
	const n = 300
	for i := range n {
		run.emit(engine.EvWeightStep, 3+i, 4096)
	}
	run.emit(engine.EvRunFinished, n+3, 0)
	run.b.Close() // the engine's Run returns
	remove()
	wg.Wait()
	for i, st := range readers {
		if errs[i] != nil {
			t.Fatalf("reader %d: %v", i, errs[i])
		}
		checkSeqs(t, got[i], n+4)
		if st.End() != EndFinished {
			t.Errorf("reader %d ended with %q, want %q", i, st.End(), EndFinished)
		}
	}
}

func TestCommandsReachOnlyARunTheOwnerRuns(t *testing.T) {
	db := openStore(t)
	srv, cl := serve(t, db)
	run := newFakeRun(t, db, "r")
	if err := cl.Send("r", engine.Command{Kind: "force"}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("a command for a run nobody runs: %v, want a refusal saying it is not running", err)
	}
	remove := srv.Add("r", run)
	ctl := Control{Client: cl, Run: "r"}
	if err := ctl.Send(engine.Command{Kind: "prune", Target: "abc"}); err != nil {
		t.Fatal(err)
	}
	remove()
	if err := ctl.Send(engine.Command{Kind: "force"}); err == nil {
		t.Fatal("a command after the run stopped was taken")
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	if len(run.sent) != 1 || run.sent[0] != (engine.Command{Kind: "prune", Target: "abc"}) {
		t.Fatalf("the engine got %v, want the one prune", run.sent)
	}
}

func TestClosingTheOwnerEndsStreams(t *testing.T) {
	db := openStore(t)
	srv, cl := serve(t, db)
	run := newFakeRun(t, db, "r")
	run.emit(engine.EvRunResumed, 0, 0)
	defer srv.Add("r", run)()
	st, err := cl.Follow("r", 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if evs := collect(t, st); len(evs) != 1 || st.End() != EndClosing {
		t.Fatalf("%d events, end %q; want the one stored event, then %q", len(evs), st.End(), EndClosing)
	}
}

func TestAnOwnerThatDiesEndsTheStreamWithoutACrash(t *testing.T) {
	db := openStore(t)
	path, _ := SocketPath(db.Path())
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // an owner that sends one event, goes live, and dies
		c, err := ln.Accept()
		if err != nil {
			return
		}
		json.NewDecoder(c).Decode(&request{})
		enc := json.NewEncoder(c)
		enc.Encode(frame{Event: &engine.Event{Seq: 1, Kind: engine.EvRunResumed}})
		enc.Encode(frame{Live: true})
		c.Close()
	}()
	cl := &Client{db: db.Path(), path: path}
	st, err := cl.Follow("r", 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	if collect(t, st); st.End() != EndLost {
		t.Fatalf("end %q, want %q", st.End(), EndLost)
	}
}

func TestAStoppedRunIsReadWhole(t *testing.T) {
	db := openStore(t)
	_, cl := serve(t, db)
	run := newFakeRun(t, db, "r")
	run.emit(engine.EvRunStarted, 0, 0)
	run.emit(engine.EvRunFinished, 0, 0)
	for i := range 5 {
		if _, err := db.AppendSamples("r", []byte(`{"step":`+string(rune('0'+i))+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cl.Follow("r", 0, 16)
	if err != nil {
		t.Fatal(err)
	}
	if st.Live || len(st.History) != 2 || st.End() != EndFinished {
		t.Fatalf("live %v, %d events, end %q; want the 2 stored events and %q", st.Live, len(st.History), st.End(), EndFinished)
	}
	if _, err := cl.Follow("nope", 0, 16); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("following a run that does not exist: %v", err)
	}
	info, err := cl.Run("r")
	if err != nil || info.ID != "r" || info.Live || !strings.HasPrefix(info.Owner, "pid ") {
		t.Fatalf("Run: %+v, %v", info, err)
	}
	runs, err := cl.Runs()
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs: %v, %v", runs, err)
	}
	recs, err := cl.Samples("r", 2)
	if err != nil || len(recs) != 2 || recs[0].Seq != 4 || string(recs[1].Rec) != `{"step":4}` {
		t.Fatalf("the newest 2 samples: %+v, %v", recs, err)
	}
	if _, err := cl.Harness("0123"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("a missing harness: %v, want not found", err)
	}
	blob, err := db.PutBlob([]byte("weights"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r/round1-weights", "r2/round1-weights"} {
		if err := db.PutCheckpoint(store.Checkpoint{ID: id, Manifest: json.RawMessage(`{}`), Blobs: []string{blob}}); err != nil {
			t.Fatal(err)
		}
	}
	cks, err := cl.Checkpoints("r")
	if err != nil || len(cks) != 1 || cks[0].ID != "r/round1-weights" || cks[0].Blobs[0] != blob {
		t.Fatalf("the run's checkpoints: %+v, %v; want its one, not run r2's", cks, err)
	}
	if err := cl.call(request{Op: "rm -rf"}, nil); err == nil || !strings.Contains(err.Error(), "unknown request") {
		t.Fatalf("an unknown request: %v", err)
	}
}
