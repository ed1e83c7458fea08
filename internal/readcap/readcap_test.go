//go:build unix

package readcap

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestFileReadsUpToItsBoundAndRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.json")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := File(p, 10, "config"); err != nil || string(b) != "0123456789" {
		t.Fatalf("a file at its bound: %q, %v", b, err)
	}
	if _, err := File(p, 9, "config"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) {
		t.Fatalf("a file over its bound: %v, want ErrTooLarge naming it", err)
	}
	if _, err := File(dir, 1<<20, "config"); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("a directory: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := File("/dev/zero", 1<<20, "config"); err == nil || !strings.Contains(err.Error(), "character device") {
			t.Fatalf("/dev/zero: %v", err)
		}
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err == nil {
		// Opening a pipe with no writer blocks: File must not open it.
		if _, err := File(fifo, 1<<20, "config"); err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("a named pipe: %v", err)
		}
	}
}

func TestReaderStopsAtItsBound(t *testing.T) {
	if _, err := Reader(bytes.NewReader(make([]byte, 101)), 100, "stream"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("101 bytes under a bound of 100: %v", err)
	}
	if b, err := Reader(bytes.NewReader(make([]byte, 100)), 100, "stream"); err != nil || len(b) != 100 {
		t.Fatalf("100 bytes under a bound of 100: %d, %v", len(b), err)
	}
}
