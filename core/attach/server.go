package attach

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"whale/core/engine"
	"whale/core/store"
)

// Server answers other processes for the workspace this process holds. A
// nil *Server is valid and serves nothing (a process that could not
// listen goes on without it).
type Server struct {
	db *store.DB
	// ws reads the workspace's runs back (engine.Workspace.Load).
	ws    *engine.Workspace
	path  string
	owner string
	ln    *net.UnixListener
	// kind is what the owner is ("bench"); readOnly refuses commands from
	// viewers that did not ask to steer (ServeReadOnly).
	kind     string
	readOnly bool

	mu      sync.Mutex
	live    map[string]*liveRun
	conns   map[net.Conn]struct{}
	closing chan struct{}
	wg      sync.WaitGroup
}

// Runner is what the server needs of a running run: the engine's event
// subscription (a wake-up) and its control queue.
type Runner interface {
	Subscribe(capacity int) *engine.Subscription[engine.Event]
	Send(engine.Command) error
}

// liveRun is a run this process is running; gone closes when it stops.
type liveRun struct {
	eng  Runner
	gone chan struct{}
}

// Serve listens on db's socket (SocketPath), readable and writable by
// this user only. A socket left by a process that died is removed; one a
// live process answers on is an error naming it.
func Serve(db *store.DB) (*Server, error) {
	path, err := SocketPath(db.Path())
	if err != nil {
		return nil, err
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	// Bound under a private name, made 0600, then renamed into place: no
	// other user can connect in between.
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%x.sock", os.Getpid()))
	os.Remove(tmp)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("attach: listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("attach: socket %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("attach: socket %s: %w", path, err)
	}
	s := &Server{db: db, ws: engine.NewWorkspace(db, nil), path: path, owner: fmt.Sprintf("pid %d", os.Getpid()), ln: ln,
		live: map[string]*liveRun{}, conns: map[net.Conn]struct{}{}, closing: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// clearStale removes a socket at path that nobody answers on.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("attach: %s exists and is not a socket: move it away so whale can serve the workspace there", path)
	}
	if c, err := net.DialTimeout("unix", path, 500*time.Millisecond); err == nil {
		c.Close()
		return fmt.Errorf("attach: another process already serves %s", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("attach: remove the stale socket %s: %w", path, err)
	}
	return nil
}

// ServeReadOnly makes the server's runs read-only to viewers that did not
// ask to steer, and names the owner kind ("bench") in what it reports: a
// command without Steer is refused with a sentence saying how to steer.
func (s *Server) ServeReadOnly(kind string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kind, s.readOnly = kind, true
}

// Path is the socket's path ("" for a nil server).
func (s *Server) Path() string {
	if s == nil {
		return ""
	}
	return s.path
}

// Add makes a run live, run by eng (an *engine.Engine): its events
// stream to attached readers and it takes their commands. The returned
// func ends that, when the run stops.
func (s *Server) Add(run string, eng Runner) (remove func()) {
	if s == nil {
		return func() {}
	}
	lr := &liveRun{eng: eng, gone: make(chan struct{})}
	s.mu.Lock()
	s.live[run] = lr
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.live[run] == lr {
				delete(s.live, run)
			}
			s.mu.Unlock()
			close(lr.gone)
		})
	}
}

func (s *Server) lookup(run string) *liveRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[run]
}

// Close stops serving: streams end with EndClosing, the socket file goes.
// The store stays open (its owner closes it after).
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	select {
	case <-s.closing:
		s.mu.Unlock()
		return nil
	default:
	}
	close(s.closing)
	s.mu.Unlock()
	err := s.ln.Close()
	os.Remove(s.path)
	// Streams say EndClosing and return; one stuck writing to a reader
	// that reads nothing is cut off after a grace second.
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		<-done
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		select {
		case <-s.closing:
			s.mu.Unlock()
			c.Close()
			return
		default:
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.handle(c)
		}()
	}
}

// handle answers one connection's request.
func (s *Server) handle(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(replyTimeout))
	dec := json.NewDecoder(c)
	var req request
	if err := dec.Decode(&req); err != nil {
		s.write(c, reply{Error: fmt.Sprintf("attach: unreadable request: %v", err)})
		return
	}
	c.SetReadDeadline(time.Time{})
	if req.Op == opEvents {
		hangup := make(chan struct{})
		go func() { io.Copy(io.Discard, c); close(hangup) }() // the reader leaving
		s.stream(c, req, hangup)
		return
	}
	data, err := s.answer(req)
	rep := reply{Data: data}
	if err != nil {
		rep = reply{Error: err.Error()}
	}
	s.write(c, rep)
}

func (s *Server) write(c net.Conn, v any) error {
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	return json.NewEncoder(c).Encode(v)
}

// answer reads what req asks for.
func (s *Server) answer(req request) (json.RawMessage, error) {
	var v any
	var err error
	switch req.Op {
	case opRuns:
		v, err = s.runs()
	case opRun:
		v, err = s.run(req.Run)
	case opSamples:
		v, err = s.samples(req.Run, req.Limit)
	case opHarness:
		v, err = s.db.GetHarness(req.Hash)
	case opCheckpoints:
		v, err = s.checkpoints(req.Run)
	case opCommand:
		err = s.command(req)
	case opProgress:
		v, err = s.progress(req.Run)
	default:
		return nil, fmt.Errorf("attach: unknown request %q (this owner answers %s, %s, %s, %s, %s, %s, %s and %s)", req.Op,
			opRuns, opRun, opEvents, opSamples, opHarness, opCheckpoints, opCommand, opProgress)
	}
	if err != nil || v == nil {
		return nil, err
	}
	return json.Marshal(v)
}

func (s *Server) runs() ([]RunInfo, error) {
	runs, err := s.db.Runs()
	if err != nil {
		return nil, err
	}
	out := make([]RunInfo, len(runs))
	for i, r := range runs {
		out[i] = s.info(r, nil)
	}
	return out, nil
}

func (s *Server) run(id string) (RunInfo, error) {
	v, err := s.ws.Load(id)
	if err != nil {
		return RunInfo{}, err
	}
	return s.info(v.Run, v.Origin), nil
}

// samples returns the newest limit (≤ 0: all) of run's samples, oldest
// first.
func (s *Server) samples(run string, limit int) ([]Record, error) {
	v, err := s.ws.Load(run)
	if err != nil {
		return nil, err
	}
	var out []Record
	err = v.Samples(0, func(seq uint64, rec []byte) error {
		out = append(out, Record{Seq: seq, Rec: rec})
		if limit > 0 && len(out) > 2*limit {
			out = append(out[:0:0], out[len(out)-limit:]...)
		}
		return nil
	})
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, err
}

// checkpoints reads run's kept checkpoints, in id order.
func (s *Server) checkpoints(run string) ([]store.Checkpoint, error) {
	if _, err := s.db.GetRun(run); err != nil {
		return nil, err
	}
	ids, err := s.db.Checkpoints(run + "/")
	if err != nil {
		return nil, err
	}
	out := make([]store.Checkpoint, 0, len(ids))
	for _, id := range ids {
		c, err := s.db.GetCheckpoint(id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// progressor is a Runner that reports its work in flight (an
// *engine.Engine does).
type progressor interface{ Progress() engine.Progress }

// progress is the work in flight of a run this process runs.
func (s *Server) progress(run string) (engine.Progress, error) {
	lr := s.lookup(run)
	if lr == nil {
		return engine.Progress{}, fmt.Errorf("run %s is not running in %s: it has no work in flight", run, s.owner)
	}
	p, ok := lr.eng.(progressor)
	if !ok {
		return engine.Progress{}, fmt.Errorf("run %s: its owner does not report progress", run)
	}
	return p.Progress(), nil
}

// info is run r as this owner reports it.
func (s *Server) info(r store.Run, origin *engine.ForkOrigin) RunInfo {
	s.mu.Lock()
	kind, ro := s.kind, s.readOnly
	s.mu.Unlock()
	return RunInfo{Run: r, Live: s.lookup(r.ID) != nil, Origin: origin, Owner: s.owner, ReadOnly: ro, OwnerKind: kind}
}

// command hands a command to the engine running the run; the engine
// journals it when it applies it (or refuses it in the journal).
func (s *Server) command(req request) error {
	if req.Command == nil {
		return errors.New("attach: a command request without a command")
	}
	lr := s.lookup(req.Run)
	if lr == nil {
		return fmt.Errorf("run %s is not running in %s, the process that holds the workspace: commands go to the process that runs it", req.Run, s.owner)
	}
	s.mu.Lock()
	kind, ro := s.kind, s.readOnly
	s.mu.Unlock()
	if ro && !req.Steer {
		return fmt.Errorf("run %s belongs to a %s (%s) and is read-only to viewers: 'whale tui --db %s --run %s --steer' steers it, and the %s records that it was steered",
			req.Run, kind, s.owner, s.db.Path(), req.Run, kind)
	}
	return lr.eng.Send(*req.Command)
}
