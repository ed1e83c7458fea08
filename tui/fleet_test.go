package tui

import (
	"strings"
	"testing"

	"whale/core/engine"
	"whale/core/remote"
)

// A run sampled by servers shows each server's figures, and a fleet its
// adapter and refused samples, under the ledger in the Run pane.
func TestTheRunPaneShowsEachServer(t *testing.T) {
	m := newTest(t, &fakeControl{})
	m.prog = &engine.Progress{Servers: &engine.FleetStatus{
		Endpoints: []remote.EndpointStats{{URL: "http://a:8000/v1", Calls: 12, LatencyMS: 40, Errors: 1}, {URL: "http://b:8000/v1", Out: true, TakenOut: 1, Errors: 3}},
		Fleet:     &engine.FleetCounts{Adapter: "run-s4-abc", Loads: 5, Stale: 2}}}
	got := strings.Join(m.progressLines(200), "\n")
	for _, want := range []string{"fleet: adapter run-s4-abc (5 loaded), refused 2 stale", "server http://a:8000/v1: 12 calls, 40 ms mean, 1 errors",
		"server http://b:8000/v1: 0 calls", "OUT, taken out 1×"} {
		if !strings.Contains(got, want) {
			t.Errorf("the Run pane lacks %q:\n%s", want, got)
		}
	}
}
