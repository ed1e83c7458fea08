// Package engine runs WHALE: the alternation of weight phases and harness
// phases, the schedules that decide when to switch, control commands, the
// rollout ledger and the event broker the TUI and headless mode read, and
// the Workspace: the one place where runs are created (their ids
// assigned), resumed, forked and read back, and stored configurations are
// decoded. It never draws a screen and never waits for a reader.
package engine
