// Package tui is whale's terminal workbench: it watches a running
// alternation through the engine's event broker, draws the phase timeline,
// patience, leaderboard, samples, checkpoints and log, and steps in through
// the engine's control channel.
//
// It must never block the engine: events arrive through a non-blocking
// subscription, Update does no I/O (store reads run as tea.Cmds), and every
// change to the run goes through Controller.Send so that the engine journals
// it. It never writes to the store itself.
package tui
