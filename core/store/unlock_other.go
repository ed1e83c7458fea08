//go:build !unix

package store

import "os"

func unlockFile(*os.File) {}
