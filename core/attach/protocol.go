// Package attach lets other processes watch the runs of a workspace that
// one whale process holds open for writing. bbolt locks the file for its
// writer, so a second process cannot open it; the writer serves a local
// unix socket beside the database instead, and answers read requests
// (the runs, one run, its stored events — streamed live while it runs —,
// its samples, a harness's source, the work in flight of a run it runs)
// and control commands for the runs it is running, which go to the
// engine's control queue and are journaled there as the workbench's own
// are. An owner may serve its runs read-only (a bench: ServeReadOnly):
// it then takes commands only from viewers that asked to steer.
//
// The socket is only ever a reader of the store on behalf of others: it
// never writes to it and never blocks an engine. A stream reads events
// from the store (where the engine puts every event before publishing
// it) and uses the engine's non-blocking broker only as a wake-up, so a
// slow reader falls behind on its own without stalling training and
// still misses nothing.
package attach

import (
	"encoding/json"
	"errors"
	"time"

	"whale/core/engine"
	"whale/core/store"
)

// Request operations.
const (
	opRuns    = "runs"    // every run of the workspace
	opRun     = "run"     // one run: its record, resume point (state, summary, archive) and origin
	opEvents  = "events"  // a run's events from Since, then live ones while it runs
	opSamples = "samples" // a run's stored samples
	opHarness = "harness" // a stored harness by hash
	// opCheckpoints lists a run's kept checkpoints (manifests).
	opCheckpoints = "checkpoints"
	opCommand     = "command" // a control command for a run the owner runs
	// opProgress is the work in flight of a run the owner runs
	// (engine.Progress): what, rollouts done, the ledger.
	opProgress = "progress"
)

// request is one line a client sends; one request per connection.
type request struct {
	Op    string `json:"op"`
	Run   string `json:"run,omitempty"`
	Since uint64 `json:"since,omitempty"`
	Hash  string `json:"hash,omitempty"`
	// Limit bounds the samples sent (the newest; 0: all).
	Limit   int             `json:"limit,omitempty"`
	Command *engine.Command `json:"command,omitempty"`
	// Steer says the person asked to steer (`whale tui --steer`): the
	// runs of an owner that serves viewers read-only (a bench) take
	// commands only then.
	Steer bool `json:"steer,omitempty"`
}

// reply is the answer to every request but events; Error is a sentence.
type reply struct {
	Error string          `json:"error,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// frame is one line of an events stream: an event, the mark that the
// stored events are all sent (Live: later ones are new), or the end of the
// stream with why.
type frame struct {
	Event *engine.Event `json:"event,omitempty"`
	Live  bool          `json:"live,omitempty"`
	End   string        `json:"end,omitempty"`
}

// RunInfo is a run as the owner reports it.
type RunInfo struct {
	store.Run
	// Live says the owner is running the run now: its events stream as
	// they happen and it takes control commands.
	Live bool `json:"live"`
	// Origin is where a forked run came from.
	Origin *engine.ForkOrigin `json:"origin,omitempty"`
	// Owner names the process that holds the workspace ("pid 1234").
	Owner string `json:"owner"`
	// ReadOnly says the owner serves its runs to viewers read-only unless
	// they ask to steer (Client.Steer): a bench, whose runs are
	// measurements that a stray key must not change.
	ReadOnly bool `json:"read_only,omitempty"`
	// OwnerKind is what the owner is ("bench"; "" for a run or a
	// workbench).
	OwnerKind string `json:"owner_kind,omitempty"`
}

// Record is one stored sample, as the store keeps it, with its sequence.
type Record struct {
	Seq uint64          `json:"seq"`
	Rec json.RawMessage `json:"rec"`
}

// ErrNoOwner is wrapped when no process serves the workspace's socket
// (none holds it, or the one that does is an older whale, or it exited).
var ErrNoOwner = errors.New("attach: no process serves this workspace")

// Stream ends, as frame.End says them.
const (
	EndFinished   = "run finished"
	EndStopped    = "run stopped by its owner"
	EndNotRunning = "run not running in the owner"
	EndClosing    = "owner closed the workspace: no more updates"
	// EndLost is a connection that ended without a word: the owner died.
	EndLost = "owner exited: no more updates"
)

// Timeouts: a request is answered at once (the owner reads the store in
// short transactions); a stream's writes give up on a reader that has
// read nothing for writeTimeout.
const (
	dialTimeout    = 2 * time.Second
	commandTimeout = 2 * time.Second
	replyTimeout   = 30 * time.Second
	writeTimeout   = 30 * time.Second
	// batch bounds the events read in one store transaction.
	batch = 256
)
