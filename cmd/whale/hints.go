package main

import (
	"path/filepath"
	"strings"
)

// Hints are commands printed for a person to run next: each must run
// exactly as printed, so it names every flag the run needs (--db when
// the workspace is not the default, --headless where a command needs it)
// and quotes what a shell would split.

// dbArg is the --db flag a printed command needs to reach the workspace
// at path: none for the default one in the current directory.
func dbArg(path string) string {
	if filepath.Clean(path) == "whale.db" {
		return ""
	}
	return " --db " + shellQuote(path)
}

// shellQuote quotes s for a POSIX shell when it holds anything a shell
// would interpret: in double quotes (the hints sit in single ones)
// unless s holds what double quotes still interpret.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./+:@%,=", r)
	}
	if s != "" && strings.IndexFunc(s, func(r rune) bool { return !plain(r) }) < 0 {
		return s
	}
	if !strings.ContainsAny(s, "\"$`\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// resumeHint is how a stopped run continues, headless or in the
// workbench.
func resumeHint(run, db string) string {
	return "'whale resume " + run + " --headless" + dbArg(db) + "' or 'whale tui --run " + run + dbArg(db) + "'"
}

// showHint is the command that reports a run.
func showHint(run, db string) string { return "'whale show " + run + dbArg(db) + "'" }
