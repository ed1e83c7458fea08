//go:build unix

package ckpt

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"whale/kernels"
)

// TestSpecialFilesAreRefused: /dev/zero, a named pipe and a directory as
// config.json or model.safetensors fail with a sentence, never read.
func TestSpecialFilesAreRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	for _, name := range []string{HFConfig, HFWeights} {
		for _, kind := range []string{"dev-zero", "fifo", "dir"} {
			dir := t.TempDir()
			writeShards(t, dir, nil)
			p := filepath.Join(dir, name)
			os.Remove(p)
			switch kind {
			case "dev-zero":
				if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
			case "fifo":
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Skip("no named pipes here:", err)
				}
			case "dir":
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, _, _, err := LoadDir(dir, kernels.NewCPU())
			if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), name) {
				t.Errorf("%s as a %s: %v, want a refusal naming it", name, kind, err)
			}
		}
	}
}
