// Package engine runs WHALE: the alternation of weight phases and harness
// phases, the schedules that decide when to switch, control commands, the
// rollout ledger and the event broker the TUI and headless mode read. It
// never draws a screen and never waits for a reader.
package engine
