// Package longtests is the one way whale's tests say how long they take.
// There are three levels, and .ci/run uses the first two:
//
//   - `go test -short` (the race pass of .ci/run): tests that take tens of
//     seconds skip (SkipShort) or do less (Short);
//   - `go test ./...` (the README's test command and the plain pass of
//     .ci/run): everything but the long tests;
//   - `WHALE_LONG_TESTS=1 go test ./...`: the tests that take minutes too
//     (Skip), and the fuller variants of some others (Enabled).
//
// No test reads testing.Short or the variable itself (internal/archtest
// checks it), so every test's cost is marked the same way and found by
// one grep.
package longtests

import (
	"os"
	"testing"
)

// Env is the variable that turns the long tests on.
const Env = "WHALE_LONG_TESTS"

// Enabled reports whether the long tests are on.
func Enabled() bool { return os.Getenv(Env) != "" }

// Skip skips t unless the long tests are on, saying what it does.
func Skip(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("%s; set %s=1 to run it", what, Env)
	}
}

// Short reports whether the tests run with -short (the race pass), where
// a test that takes tens of seconds does a smaller share of its work.
func Short() bool { return testing.Short() }

// SkipShort skips t under -short (the race pass), saying what it does;
// the plain `go test ./...` runs it.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s; -short (the race pass) leaves it to the plain pass", what)
	}
}
