// Package metricstest decodes whale's TensorBoard event files with
// Debian's python3-protobuf against our own .proto, for the tests of
// core/metrics and cmd/whale; only tests import it.
package metricstest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/metrics"
)

// Decoded is one line of testdata/decode_events.py.
type Decoded struct {
	File        string  `json:"file"`
	FileVersion string  `json:"file_version"`
	Step        int64   `json:"step"`
	WallTime    float64 `json:"wall_time"`
	Tag         string  `json:"tag"`
	Value       float64 `json:"value"`
}

// PythonDecode decodes event files with Debian's python3-protobuf
// against core/tfevent/testdata/tfevent.proto (skipping t, saying why,
// where no Python has google.protobuf). root is the repository root.
func PythonDecode(t *testing.T, root string, files ...string) []Decoded {
	t.Helper()
	script := filepath.Join(root, "core", "metrics", "testdata", "decode_events.py")
	proto := filepath.Join(root, "core", "tfevent", "testdata", "tfevent.proto")
	var py string
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import google.protobuf").Run() == nil {
			py = p
			break
		}
	}
	if py == "" {
		t.Skip("no python3 with google.protobuf: apt-get install python3-protobuf to decode the event files with it")
	}
	cmd := exec.Command(py, append([]string{script, proto}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	var ds []Decoded
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var d Decoded
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("decoder line %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	return ds
}

// CheckDecoded compares the Python decoding of one event file with the
// points it was written from: the version record, then every scalar in
// order at step = model calls, value = the point's as float32.
func CheckDecoded(t *testing.T, ds []Decoded, pts []metrics.Point, wallTime float64) {
	t.Helper()
	if len(ds) != len(pts)+1 {
		t.Fatalf("decoded %d records' scalars, want the version record and %d scalars", len(ds), len(pts))
	}
	if ds[0].FileVersion != "brain.Event:2" || ds[0].WallTime != wallTime {
		t.Errorf("version record %+v", ds[0])
	}
	for i, p := range pts {
		d := ds[i+1]
		if d.Tag != p.Tag || d.Step != int64(p.Calls) || d.Value != float64(float32(p.Value)) || d.WallTime != wallTime {
			t.Errorf("scalar %d: decoded %s at %d = %v (wall %v), store %s at %d calls = %v", i, d.Tag, d.Step, d.Value, d.WallTime, p.Tag, p.Calls, p.Value)
		}
	}
}
