package tui

import (
	"github.com/charmbracelet/bubbles/key"

	"whale/tui/keymap"
)

// keyMap is every key the workbench answers to; `?` shows it whole.
type keyMap struct {
	Run, Harnesses, Samples, Checkpoints, Log key.Binding
	Tab, Up, Down, PageUp, PageDown, Enter    key.Binding
	Back                                      key.Binding
	Force, Pause, Help, Quit                  key.Binding
	Prune, Unprune, Knobs, Export, Fork       key.Binding
	Kind, Kept, Next, Prev                    key.Binding
	Filter, Yes                               key.Binding
	// While the filter is typed: esc drops it, backspace erases a rune.
	// (Not in keys.toml: they edit the filter's text.)
	Clear, Erase key.Binding
}

// keyActions are the workbench's actions as keys.toml names them (the
// README's workbench section lists them), with their default keys. A
// scope is the pane or mode an action works in: actions of two
// different scopes may share a key.
var keyActions = []keymap.Action{
	{Name: "run", Keys: []string{"1"}, Help: "run pane"},
	{Name: "harnesses", Keys: []string{"2"}, Help: "harnesses pane"},
	{Name: "samples", Keys: []string{"3"}, Help: "samples pane"},
	{Name: "checkpoints", Keys: []string{"4"}, Help: "checkpoints pane"},
	{Name: "log", Keys: []string{"5"}, Help: "log pane"},
	{Name: "tab", Keys: []string{"tab"}, Help: "next pane"},
	{Name: "up", Keys: []string{"up"}, Help: "up"},
	{Name: "down", Keys: []string{"down"}, Help: "down"},
	{Name: "pageup", Keys: []string{"pgup"}, Help: "a page up (lists, log, open views)"},
	{Name: "pagedown", Keys: []string{"pgdown"}, Help: "a page down"},
	{Name: "enter", Keys: []string{"enter"}, Help: "open: sample, harness diff, a log line or a cut error whole"},
	{Name: "back", Keys: []string{"esc", "backspace"}, Help: "back"},
	{Name: "force", Keys: []string{"f"}, Help: "force a phase switch (asks y/n)"},
	{Name: "pause", Keys: []string{" "}, Help: "pause / resume"},
	{Name: "help", Keys: []string{"?"}, Help: "this key map"},
	{Name: "quit", Keys: []string{"q", "ctrl+c"}, Help: "quit (the run resumes later)"},
	{Name: "prune", Keys: []string{"x"}, Help: "harnesses: prune the selected one", Scope: "harnesses"},
	{Name: "unprune", Keys: []string{"u"}, Help: "harnesses: unprune the selected one", Scope: "harnesses"},
	{Name: "knobs", Keys: []string{"k"}, Help: "harnesses: search-space knobs to freeze or free", Scope: "harnesses"},
	{Name: "export", Keys: []string{"e"}, Help: "checkpoints: export the selected one", Scope: "checkpoints"},
	{Name: "fork", Keys: []string{"r"}, Help: "checkpoints: a new run from the selected one (y/n)", Scope: "checkpoints"},
	{Name: "kind", Keys: []string{"c"}, Help: "samples: cycle the failure-kind filter", Scope: "samples"},
	{Name: "kept", Keys: []string{"a"}, Help: "samples: show kept ones too", Scope: "samples"},
	{Name: "next", Keys: []string{"n"}, Help: "an open sample: the next one", Scope: "sample"},
	{Name: "prev", Keys: []string{"p"}, Help: "an open sample: the previous one", Scope: "sample"},
	{Name: "filter", Keys: []string{"/"}, Help: "filter the focused list"},
	{Name: "yes", Keys: []string{"y", "Y"}, Help: "yes, when asked y/n", Scope: "confirm"},
}

// LoadKeys is the workbench's default keys changed by the keys.toml at
// path (keymap.DefaultPath; a missing file changes nothing). Its error
// names the file, the line and, for a conflict, both actions.
func LoadKeys(path string) (keymap.Map, error) {
	return keymap.Load(path, keyActions)
}

// defaultKeyMap is the keys when no file changes them.
func defaultKeyMap() keymap.Map {
	m, err := keymap.Defaults(keyActions)
	if err != nil {
		panic(err) // the defaults conflict: a bug here, caught by every test
	}
	return m
}

// keys is the default keys (the README's key table).
var keys = keysFrom(defaultKeyMap())

// keysFrom is a key map's bindings.
func keysFrom(m keymap.Map) keyMap {
	b := m.Binding
	k := keyMap{
		Run: b("run"), Harnesses: b("harnesses"), Samples: b("samples"), Checkpoints: b("checkpoints"), Log: b("log"),
		Tab: b("tab"), Up: b("up"), Down: b("down"), PageUp: b("pageup"), PageDown: b("pagedown"), Enter: b("enter"),
		Back: b("back"), Force: b("force"), Pause: b("pause"), Help: b("help"), Quit: b("quit"),
		Prune: b("prune"), Unprune: b("unprune"), Knobs: b("knobs"), Export: b("export"), Fork: b("fork"),
		Kind: b("kind"), Kept: b("kept"), Next: b("next"), Prev: b("prev"), Filter: b("filter"), Yes: b("yes"),
		Clear: key.NewBinding(key.WithKeys("esc")),
		Erase: key.NewBinding(key.WithKeys("backspace")),
	}
	// Keys that go together share a help line.
	k.Prune.SetHelp(k.Prune.Help().Key+" / "+k.Unprune.Help().Key, "harnesses: prune / unprune the selected one")
	k.Next.SetHelp(k.Next.Help().Key+" / "+k.Prev.Help().Key, "an open sample: the next / previous one")
	k.Unprune.SetHelp("", "")
	k.Prev.SetHelp("", "")
	k.Yes.SetHelp("", "")
	return k
}

// keyOf names a binding's first key as the help writes it.
func keyOf(b key.Binding) string {
	if len(b.Keys()) == 0 {
		return ""
	}
	return keymap.Display(b.Keys()[0])
}

func (k keyMap) all() []key.Binding {
	return []key.Binding{k.Run, k.Harnesses, k.Samples, k.Checkpoints, k.Log, k.Tab, k.Up, k.Down,
		k.PageUp, k.PageDown, k.Enter, k.Back, k.Force, k.Pause, k.Filter, k.Help, k.Quit, k.Prune, k.Unprune, k.Knobs, k.Export, k.Fork, k.Kind, k.Kept, k.Next}
}
