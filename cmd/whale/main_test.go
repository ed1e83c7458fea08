package main

import (
	"os"
	"testing"
)

// TestMain lets a test run this test binary as the whale command itself
// (WHALE_TEST_AS_MAIN=1), so that process-level behaviour — being killed
// with SIGKILL, exit statuses — is tested on the real wiring.
func TestMain(m *testing.M) {
	if os.Getenv("WHALE_TEST_AS_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}
