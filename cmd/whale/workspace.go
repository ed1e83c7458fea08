package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"whale/core/engine"
	"whale/core/store"
)

// existingStore refuses a --db that names no workspace, for commands that
// only read or continue one (runs, show, resume, gc, export): opening
// would create an empty file there, and a mistyped path would then read
// as a workspace with no runs.
func existingStore(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--db %s: no workspace there (check the path; 'whale run' creates one)", path)
	case err != nil:
		return fmt.Errorf("--db %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("--db %s: not a workspace file (it is a %s)", path, fileKind(fi.Mode()))
	}
	return nil
}

// fileKind names a file mode's type in words.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// openWorkspace opens the workspace named by --db (creating it), its runs
// on the process's backend, failing within a second if another process
// holds it.
func openWorkspace(path string) (*engine.Workspace, error) {
	return engine.Open(path, runBackend())
}

// openExistingWorkspace is openWorkspace for commands that must not
// create a workspace.
func openExistingWorkspace(path string) (*engine.Workspace, error) {
	if err := existingStore(path); err != nil {
		return nil, err
	}
	return openWorkspace(path)
}

// openExistingStore is openStore for commands that must not create a
// workspace.
func openExistingStore(path string) (*store.DB, error) {
	if err := existingStore(path); err != nil {
		return nil, err
	}
	return openStore(path)
}
