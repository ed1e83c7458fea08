//go:build unix

package experiments

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path (created if missing), waiting
// for another process's, and returns its release. The lock is advisory
// (flock): every writer of the record takes it. It holds on a local
// disk and on NFS (Linux maps flock to NFS locks).
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
