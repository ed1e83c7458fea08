// Package tui is whale's terminal workbench: it watches a running
// alternation through the engine's event broker, draws the phase timeline,
// patience, leaderboard, samples, checkpoints and log, and steps in through
// the engine's control channel. The same workbench watches a run another
// process owns (its events and commands then cross that process's socket,
// see core/attach; Options.Attached says so), and the bench dashboard
// (Bench) lists a bench's runs and opens any of them in it.
//
// It must never block the engine: events arrive through a non-blocking
// subscription, Update does no I/O (store reads run as tea.Cmds) beyond
// Controller.Send — a channel send in process; when attached, one local
// round trip that the owner answers at once and that gives up within
// seconds —, and every change to the run goes through Controller.Send so
// that the engine journals it. It never writes to the store itself.
package tui
