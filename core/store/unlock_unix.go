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

// mapFile maps f's first size bytes read-only, for the page verifier to
// read without a system call a page; unmap releases it. ok is false
// where the file cannot be mapped (the verifier then reads).
func mapFile(f *os.File, size int64) (b []byte, unmap func(), ok bool) {
	if size <= 0 || size != int64(int(size)) {
		return nil, nil, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return b, func() { syscall.Munmap(b) }, true
}
