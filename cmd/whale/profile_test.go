package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// --cpuprofile and --memprofile write profiles (gzipped protocol buffers,
// as pprof reads them) for a command that succeeds and for one that fails
// (main ends them then).
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		fail bool
	}{
		{"ok", []string{"data", "sample", "--domain", "math", "--split", "val", "--n", "1"}, false},
		{"fail", []string{"data", "sample", "--domain", "nosuch"}, true},
	} {
		cpu, mem := filepath.Join(dir, tc.name+".cpu"), filepath.Join(dir, tc.name+".mem")
		var prof profiles
		root := newRootProfiled(&prof)
		root.SetOut(new(bytes.Buffer))
		root.SetErr(new(bytes.Buffer))
		root.SetArgs(append([]string{"--cpuprofile", cpu, "--memprofile", mem}, tc.args...))
		err := root.Execute()
		if (err != nil) != tc.fail {
			t.Fatalf("%s: error %v", tc.name, err)
		}
		if err := prof.stop(); err != nil {
			t.Fatalf("%s: stop: %v", tc.name, err)
		}
		for _, p := range []string{cpu, mem} {
			f, err := os.Open(p)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			n, err := gunzipLen(f)
			f.Close()
			if err != nil || n == 0 {
				t.Fatalf("%s: %s is not a gzipped profile (%d bytes): %v", tc.name, p, n, err)
			}
		}
	}
}

func gunzipLen(r io.Reader) (int64, error) {
	z, err := gzip.NewReader(r)
	if err != nil {
		return 0, err
	}
	return io.Copy(io.Discard, z)
}
