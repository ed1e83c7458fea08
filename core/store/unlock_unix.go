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

// tryLockShared takes a shared lock on f if no process holds an
// exclusive one, without waiting.
func tryLockShared(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) == nil
}
