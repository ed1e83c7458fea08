// Package longtests says whether the tests that take minutes should run:
// they do when WHALE_LONG_TESTS is set to anything (the README's long
// test command), and skip with a sentence saying so otherwise.
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
