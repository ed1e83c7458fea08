//go:build unix

package store

import (
	"os"
	"syscall"
)

// unlockFile releases bbolt's lock on f. Closing f is not enough when
// bbolt has mapped it: the mapping keeps the locked file description open.
func unlockFile(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
