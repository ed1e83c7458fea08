package attach

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"whale/core/engine"
	"whale/core/store"
)

// Client asks the owner of a workspace. Each request is a connection of
// its own, so a client is safe for concurrent use.
type Client struct {
	db, path string
}

// Dial finds the process serving the workspace at db. It wraps ErrNoOwner
// when nobody answers on the socket.
func Dial(db string) (*Client, error) {
	path, err := SocketPath(db)
	if err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", path, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoOwner, path, err)
	}
	c.Close()
	return &Client{db: db, path: path}, nil
}

func (c *Client) dial() (net.Conn, error) {
	conn, err := net.DialTimeout("unix", c.path, dialTimeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (the process holding %s may have exited): %v", ErrNoOwner, c.path, c.db, err)
	}
	return conn, nil
}

// call sends req and decodes the reply's data into out (nil: none).
func (c *Client) call(req request, out any) error { return c.callWithin(req, out, replyTimeout) }

func (c *Client) callWithin(req request, out any, limit time.Duration) error {
	conn, err := c.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(limit))
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return fmt.Errorf("attach: %s: send %s: %w", c.path, req.Op, err)
	}
	var rep reply
	if err := json.NewDecoder(conn).Decode(&rep); err != nil {
		return fmt.Errorf("attach: %s: the owner's answer to %s: %w", c.path, req.Op, err)
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(rep.Data, out); err != nil {
		return fmt.Errorf("attach: %s: the owner's answer to %s: %w", c.path, req.Op, err)
	}
	return nil
}

// Runs lists the workspace's runs.
func (c *Client) Runs() ([]RunInfo, error) {
	var out []RunInfo
	return out, c.call(request{Op: opRuns}, &out)
}

// Run reads one run.
func (c *Client) Run(id string) (RunInfo, error) {
	var out RunInfo
	return out, c.call(request{Op: opRun, Run: id}, &out)
}

// Samples reads the newest limit (≤ 0: all) of run's samples, oldest first.
func (c *Client) Samples(run string, limit int) ([]Record, error) {
	var out []Record
	return out, c.call(request{Op: opSamples, Run: run, Limit: limit}, &out)
}

// Harness reads a stored harness.
func (c *Client) Harness(hash string) (store.Harness, error) {
	var out store.Harness
	return out, c.call(request{Op: opHarness, Hash: hash}, &out)
}

// Checkpoints reads run's kept checkpoints (their manifests), in id order.
func (c *Client) Checkpoints(run string) ([]store.Checkpoint, error) {
	var out []store.Checkpoint
	return out, c.call(request{Op: opCheckpoints, Run: run}, &out)
}

// Send hands a control command to the engine running run; the error is
// the owner's sentence when it does not take it. The owner answers at
// once (an engine's control queue never waits), so Send gives up after
// commandTimeout rather than freeze a screen that called it.
func (c *Client) Send(run string, cmd engine.Command) error {
	return c.callWithin(request{Op: opCommand, Run: run, Command: &cmd}, nil, commandTimeout)
}

// Steer is Send from a person who asked to steer (`whale tui --steer`):
// an owner that serves its runs read-only (a bench) takes it, and the
// run's journal keeps it as the bench's record of the steering.
func (c *Client) Steer(run string, cmd engine.Command) error {
	return c.callWithin(request{Op: opCommand, Run: run, Command: &cmd, Steer: true}, nil, commandTimeout)
}

// Progress asks the owner for the work in flight of a run it runs (the
// bar and ledger of an attached workbench); an owner that is not running
// the run says so.
func (c *Client) Progress(run string) (engine.Progress, error) {
	var p engine.Progress
	return p, c.callWithin(request{Op: opProgress, Run: run}, &p, commandTimeout)
}

// Stream is a run's events as the owner sends them.
type Stream struct {
	// History are the events stored when the stream began.
	History []engine.Event
	// Live says the owner is running the run: later events arrive on Sub.
	Live bool
	// Sub receives the events after History; it closes when the stream
	// ends (End says why).
	Sub *engine.Subscription[engine.Event]

	conn   net.Conn
	broker *engine.Broker[engine.Event]
	mu     sync.Mutex
	end    string
}

// Follow opens run's event stream from sequence since: it returns once
// the stored events are read (History); while the owner runs the run, a
// goroutine then publishes each new event to Sub, which queues at most
// capacity of them for a slow reader (dropping the oldest).
func (c *Client) Follow(run string, since uint64, capacity int) (*Stream, error) {
	conn, err := c.dial()
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(replyTimeout))
	if err := json.NewEncoder(conn).Encode(request{Op: opEvents, Run: run, Since: since}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("attach: %s: ask for run %s's events: %w", c.path, run, err)
	}
	s := &Stream{conn: conn, broker: engine.NewBroker[engine.Event]()}
	s.Sub = s.broker.Subscribe(capacity)
	dec := json.NewDecoder(conn)
	for live := false; !live; {
		var f frame
		if err := dec.Decode(&f); err != nil {
			conn.Close()
			return nil, fmt.Errorf("attach: %s: run %s's events: %w", c.path, run, err)
		}
		switch {
		case f.Event != nil:
			s.History = append(s.History, *f.Event)
		case f.End != "":
			if len(s.History) == 0 && f.End != EndNotRunning && f.End != EndFinished {
				conn.Close()
				return nil, errors.New(f.End) // the run is not there, or unreadable
			}
			s.finish(f.End)
			return s, nil
		default: // the Live mark
			live = true
		}
	}
	s.Live = true
	conn.SetDeadline(time.Time{})
	go s.pump(dec)
	return s, nil
}

func (s *Stream) pump(dec *json.Decoder) {
	for {
		var f frame
		if err := dec.Decode(&f); err != nil {
			s.finish(EndLost)
			return
		}
		if f.Event != nil {
			s.broker.Publish(*f.Event)
		}
		if f.End != "" {
			s.finish(f.End)
			return
		}
	}
}

// finish records why the stream ended (the first reason only) and closes
// Sub.
func (s *Stream) finish(why string) {
	s.mu.Lock()
	if s.end == "" {
		s.end = why
	}
	s.mu.Unlock()
	s.conn.Close()
	s.broker.Close()
}

// End says why the stream ended ("" while it runs).
func (s *Stream) End() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// Close hangs up; the owner's run goes on.
func (s *Stream) Close() { s.finish("closed by the reader") }

// Control sends one run's commands to its owner: the workbench's
// Controller when attached. A send is one local round trip that the
// owner answers at once (handing a command to an engine never waits).
type Control struct {
	Client *Client
	Run    string
	// Steer sends as Client.Steer does.
	Steer bool
}

// Send hands c to the owner.
func (c Control) Send(cmd engine.Command) error {
	if c.Steer {
		return c.Client.Steer(c.Run, cmd)
	}
	return c.Client.Send(c.Run, cmd)
}
