// Package tui is whale's terminal workbench: it watches a running
// alternation through the engine's event broker, draws the phase timeline,
// the work in flight with its ETA, the ledger, patience, leaderboard,
// samples, checkpoints and log, and steps in through the engine's control
// channel. The same workbench watches a run another process owns (its
// events and commands then cross that process's socket, see core/attach;
// Options.Attached says so), a stored run nothing runs (read-only), and
// the bench dashboard (Bench) lists a bench's runs and opens any of them
// in it.
//
// Every key is answered in the frame it is pressed in: a command is shown
// queued at once (a prune marks its row), then applied at its step or
// refused once the engine journals it (control.go). A force names the
// phase on screen, so one that arrives after that phase ended is dropped,
// never applied to the next. A read-only workbench (Options.ReadOnly)
// refuses every key that changes the run with a sentence. The keys are the
// defaults (keys.go) changed by a person's keys.toml (LoadKeys, package
// tui/keymap, Options.Keys); the help screen and the footer name the keys
// in force.
//
// It must never block the engine: events arrive through a non-blocking
// subscription, Update does no I/O (store reads run as tea.Cmds) beyond
// Controller.Send — a channel send in process; when attached, one local
// round trip that the owner answers at once and that gives up within
// seconds —, and every change to the run goes through Controller.Send so
// that the engine journals it. It never writes to the store itself, and
// it imports nothing of whale but core/engine, core/attach and its own
// sub-packages, which import none of core (imports_test.go).
package tui
