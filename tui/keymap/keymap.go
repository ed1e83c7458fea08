// Package keymap lets a person change the workbench's keys: a TOML file
// ($XDG_CONFIG_HOME/whale/keys.toml) maps action names to keys
// (`force = "F"`, `quit = ["q", "ctrl+c"]`); actions it does not name
// keep their defaults. A key bound to two actions that can be active at
// once is refused naming both, as is an unknown action, naming the line.
// The help screen lists the resulting bindings (Help), so it always says
// what the keys do now.
//
// It reads the one file it is given and nothing else.
package keymap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/charmbracelet/bubbles/key"
)

// Action is one thing a key does.
type Action struct {
	Name string
	Keys []string
	Help string
	// Scope is "" for an action active everywhere, or the pane or mode
	// it belongs to: two actions of different non-empty scopes may share
	// a key (r reloads samples and forks a checkpoint).
	Scope string
}

// Map is the workbench's actions with their keys.
type Map struct {
	actions []Action
	// from says where each action's keys came from: "default" or
	// "FILE:LINE".
	from map[string]string
}

// DefaultPath is $XDG_CONFIG_HOME/whale/keys.toml ($HOME/.config when
// XDG_CONFIG_HOME is unset).
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("keymap: no XDG_CONFIG_HOME and no home directory: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "whale", "keys.toml"), nil
}

// Defaults is the map of defaults, refused if two of them conflict.
func Defaults(defaults []Action) (Map, error) {
	m := Map{actions: slices.Clone(defaults), from: map[string]string{}}
	for _, a := range m.actions {
		m.from[a.Name] = "default"
	}
	return m, m.check()
}

// Load is defaults changed by the file at path; a missing file changes
// nothing.
func Load(path string, defaults []Action) (Map, error) {
	m, err := Defaults(defaults)
	if err != nil {
		return m, err
	}
	src, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("keymap: %w", err)
	}
	var raw map[string]any
	md, err := toml.Decode(string(src), &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return m, fmt.Errorf("keymap: %s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		return m, fmt.Errorf("keymap: %s: %w", path, err)
	}
	for _, k := range md.Keys() {
		if len(k) != 1 {
			continue // inside a table, refused with the table
		}
		name := k[0]
		line := lineOf(src, name)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("keymap: %s:%d: %s: %s", path, line, name, fmt.Sprintf(format, args...))
		}
		v := raw[name]
		if _, ok := v.(map[string]any); ok {
			return m, fmt.Errorf("keymap: %s:%d: table [%s]: tables are not part of a key map: write action = \"key\" at the top", path, line, name)
		}
		i := slices.IndexFunc(m.actions, func(a Action) bool { return a.Name == name })
		if i < 0 {
			return m, bad("unknown action (have %s)", strings.Join(m.Names(), ", "))
		}
		ks, ok := keysOf(v)
		if !ok {
			return m, bad("want a key or an array of keys, such as \"F\" or [\"q\", \"ctrl+c\"]")
		}
		m.actions[i].Keys = ks
		m.from[name] = fmt.Sprintf("%s:%d", path, line)
	}
	return m, m.check()
}

// lineOf is the 1-based line where a top-level key or table named name
// is written (a plain, quoted or dotted key, or a [table] header); 0 when
// none is found.
func lineOf(src []byte, name string) int {
	for i, l := range strings.Split(string(src), "\n") {
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "["); ok {
			l = strings.TrimSpace(strings.TrimPrefix(rest, "["))
		}
		for _, q := range []string{`"`, `'`} {
			if rest, ok := strings.CutPrefix(l, q+name+q); ok {
				l = name + rest
			}
		}
		rest, ok := strings.CutPrefix(l, name)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "]") {
			return i + 1
		}
	}
	return 0
}

// keysOf is a value's keys: one string, or an array of non-empty strings.
func keysOf(v any) ([]string, bool) {
	switch x := v.(type) {
	case string:
		return []string{x}, x != ""
	case []any:
		var out []string
		for _, k := range x {
			s, ok := k.(string)
			if !ok || s == "" {
				return nil, false
			}
			out = append(out, s)
		}
		return out, len(out) > 0
	}
	return nil, false
}

// check refuses a key bound to two actions that can be active at once.
func (m Map) check() error {
	var errs []error
	for i, a := range m.actions {
		for _, k := range a.Keys {
			for _, b := range m.actions[:i] {
				if !slices.Contains(b.Keys, k) || (a.Scope != "" && b.Scope != "" && a.Scope != b.Scope) {
					continue
				}
				errs = append(errs, fmt.Errorf("keymap: key %q is bound to both %s (%s) and %s (%s)", k, b.Name, m.from[b.Name], a.Name, m.from[a.Name]))
			}
		}
	}
	return errors.Join(errs...)
}

// Names lists the actions, sorted.
func (m Map) Names() []string {
	var out []string
	for _, a := range m.actions {
		out = append(out, a.Name)
	}
	sort.Strings(out)
	return out
}

// Keys is an action's keys (nil for an unknown action).
func (m Map) Keys(action string) []string {
	for _, a := range m.actions {
		if a.Name == action {
			return a.Keys
		}
	}
	return nil
}

// Binding is an action as a bubbles key binding, its help showing its
// first key.
func (m Map) Binding(action string) key.Binding {
	for _, a := range m.actions {
		if a.Name == action {
			return key.NewBinding(key.WithKeys(a.Keys...), key.WithHelp(Display(a.Keys[0]), a.Help))
		}
	}
	return key.NewBinding(key.WithDisabled())
}

// Line is one line of the help screen.
type Line struct {
	Keys, Help string
}

// Help lists every action with help text and its keys now, in the
// defaults' order.
func (m Map) Help() []Line {
	var out []Line
	for _, a := range m.actions {
		if a.Help == "" {
			continue
		}
		ks := make([]string, len(a.Keys))
		for i, k := range a.Keys {
			ks[i] = Display(k)
		}
		out = append(out, Line{Keys: strings.Join(ks, "/"), Help: a.Help})
	}
	return out
}

// display names a key as the help shows it.
func Display(k string) string {
	switch k {
	case " ":
		return "space"
	case "up":
		return "↑"
	case "down":
		return "↓"
	case "pgup":
		return "PgUp"
	case "pgdown":
		return "PgDn"
	}
	return k
}
