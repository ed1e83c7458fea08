//go:build !unix

package store

import "os"

func unlockFile(*os.File) {}

func tryLockShared(*os.File) bool { return true }

func mapFile(*os.File, int64) ([]byte, func(), bool) { return nil, nil, false }
