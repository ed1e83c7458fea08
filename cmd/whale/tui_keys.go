package main

import (
	"fmt"
	"os"

	"whale/tui"
	"whale/tui/keymap"
)

// workbenchKeys is the workbench's keys: the defaults changed by the
// keys.toml at path, or at $XDG_CONFIG_HOME/whale/keys.toml when path is
// "" (a missing default file changes nothing; a missing --keys FILE is
// refused). A bad file is a usage error naming the file and the line, so
// the workbench never opens with keys other than the person wrote.
func workbenchKeys(path string) (*keymap.Map, error) {
	if path == "" {
		p, err := keymap.DefaultPath()
		if err != nil {
			return nil, usageError{err}
		}
		path = p
	} else if _, err := os.Stat(path); err != nil {
		return nil, usageError{fmt.Errorf("--keys %s: %w", path, err)}
	}
	m, err := tui.LoadKeys(path)
	if err != nil {
		return nil, usageError{err}
	}
	return &m, nil
}
