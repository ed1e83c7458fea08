package tui

import "github.com/charmbracelet/bubbles/key"

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
	Clear, Erase key.Binding
}

var keys = keyMap{
	Run:         key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "run pane")),
	Harnesses:   key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "harnesses pane")),
	Samples:     key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "samples pane")),
	Checkpoints: key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "checkpoints pane")),
	Log:         key.NewBinding(key.WithKeys("5"), key.WithHelp("5", "log pane")),
	Tab:         key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
	Up:          key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "up")),
	Down:        key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "down")),
	PageUp:      key.NewBinding(key.WithKeys("pgup"), key.WithHelp("PgUp", "a page up (lists, log, open views)")),
	PageDown:    key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("PgDn", "a page down")),
	Enter:       key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open: sample, harness diff, a log line or a cut error whole")),
	Back:        key.NewBinding(key.WithKeys("esc", "backspace"), key.WithHelp("esc", "back")),
	Force:       key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "force a phase switch (asks y/n)")),
	Pause:       key.NewBinding(key.WithKeys(" "), key.WithHelp("space", "pause / resume")),
	Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "this key map")),
	Quit:        key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit (the run resumes later)")),
	Prune:       key.NewBinding(key.WithKeys("x"), key.WithHelp("x / u", "harnesses: prune / unprune the selected one")),
	Unprune:     key.NewBinding(key.WithKeys("u")),
	Knobs:       key.NewBinding(key.WithKeys("k"), key.WithHelp("k", "harnesses: search-space knobs to freeze or free")),
	Export:      key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "checkpoints: export the selected one")),
	Kind:        key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "samples: cycle the failure-kind filter")),
	Kept:        key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "samples: show kept ones too")),
	Next:        key.NewBinding(key.WithKeys("n"), key.WithHelp("n / p", "an open sample: the next / previous one")),
	Prev:        key.NewBinding(key.WithKeys("p")),
	Fork:        key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "checkpoints: a new run from the selected one (y/n)")),
	Filter:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter the focused list")),
	Yes:         key.NewBinding(key.WithKeys("y", "Y")),
	Clear:       key.NewBinding(key.WithKeys("esc")),
	Erase:       key.NewBinding(key.WithKeys("backspace")),
}

func (k keyMap) all() []key.Binding {
	return []key.Binding{k.Run, k.Harnesses, k.Samples, k.Checkpoints, k.Log, k.Tab, k.Up, k.Down,
		k.PageUp, k.PageDown, k.Enter, k.Back, k.Force, k.Pause, k.Filter, k.Help, k.Quit, k.Prune, k.Unprune, k.Knobs, k.Export, k.Fork, k.Kind, k.Kept, k.Next}
}
