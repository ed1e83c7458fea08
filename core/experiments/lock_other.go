//go:build !unix

package experiments

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// lockFile takes an exclusive lock on path by creating it (O_EXCL),
// waiting up to two minutes for another process to remove it, and
// returns its release (which removes it). A lock file left by a killed
// process must be removed by hand; the error says so.
func lockFile(path string) (func(), error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s is held for over two minutes: if no whale writes the record, remove it", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
