package keymap

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var defaults = []Action{
	{Name: "quit", Keys: []string{"q", "ctrl+c"}, Help: "quit"},
	{Name: "force", Keys: []string{"f"}, Help: "force a phase switch"},
	{Name: "filter", Keys: []string{"/"}, Help: "filter"},
	{Name: "reload", Keys: []string{"r"}, Help: "reload samples", Scope: "samples"},
	{Name: "fork", Keys: []string{"r"}, Help: "new run from a checkpoint", Scope: "checkpoints"},
	{Name: "pause", Keys: []string{" "}, Help: "pause"},
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMissingFileKeepsTheDefaults(t *testing.T) {
	m, err := Load(filepath.Join(t.TempDir(), "none.toml"), defaults)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Keys("quit"); !reflect.DeepEqual(got, []string{"q", "ctrl+c"}) {
		t.Errorf("quit keys %v", got)
	}
}

// TestFileChangesKeysAndTheHelpSaysSo: the help lists the keys the file
// set, in the defaults' order, and the binding answers to them.
func TestFileChangesKeysAndTheHelpSaysSo(t *testing.T) {
	m, err := Load(write(t, "# mine\nforce = \"F\"\nquit = [\"x\", \"ctrl+q\"]\n"), defaults)
	if err != nil {
		t.Fatal(err)
	}
	want := []Line{{"x/ctrl+q", "quit"}, {"F", "force a phase switch"}, {"/", "filter"}, {"r", "reload samples"}, {"r", "new run from a checkpoint"}, {"space", "pause"}}
	if got := m.Help(); !reflect.DeepEqual(got, want) {
		t.Errorf("help %v, want %v", got, want)
	}
	if b := m.Binding("force"); !reflect.DeepEqual(b.Keys(), []string{"F"}) || b.Help().Key != "F" {
		t.Errorf("force binding keys %v help %q", b.Keys(), b.Help().Key)
	}
}

func TestConflictNamesBothActions(t *testing.T) {
	_, err := Load(write(t, "force = \"/\"\n"), defaults)
	if err == nil || !strings.Contains(err.Error(), `key "/" is bound to both force`) || !strings.Contains(err.Error(), "and filter (default)") {
		t.Fatalf("err %v, want the conflict naming force and filter", err)
	}
	if !strings.Contains(err.Error(), "keys.toml:1") {
		t.Errorf("err %v does not say where force was set", err)
	}
	// A pane-local key may repeat in another pane, not beside a global one.
	if _, err := Load(write(t, "reload = \"r\"\n"), defaults); err != nil {
		t.Errorf("r in two panes: %v", err)
	}
	if _, err := Load(write(t, "pause = \"r\"\n"), defaults); err == nil || !strings.Contains(err.Error(), "reload") || !strings.Contains(err.Error(), "fork") {
		t.Errorf("a global r beside the panes' r: %v, want conflicts naming reload and fork", err)
	}
}

func TestBadFilesNameTheLine(t *testing.T) {
	for body, want := range map[string]string{
		"quit = \"q\"\nfrce = \"F\"\n": "keys.toml:2: frce: unknown action",
		"force = 3\n":                  "keys.toml:1: force: want a key",
		"force = []\n":                 "keys.toml:1: force: want a key",
		"[keys]\nforce = \"F\"\n":      "keys.toml:1: table [keys]",
	} {
		if _, err := Load(write(t, body), defaults); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", body, err, want)
		}
	}
}

func TestDefaultPathFollowsXDG(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if p, err := DefaultPath(); err != nil || p != "/cfg/whale/keys.toml" {
		t.Errorf("DefaultPath = %q, %v", p, err)
	}
}

// The workbench imports this package, and the workbench may import only
// core/engine and core/attach of whale: so this one imports nothing of
// whale at all.
func TestImportsNothingOfWhale(t *testing.T) {
	ms, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ms {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if s, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(s, "whale/") {
				t.Errorf("%s imports %s", p, s)
			}
		}
	}
}

func TestSyntaxErrorNamesTheLine(t *testing.T) {
	if _, err := Load(write(t, "quit = \"q\"\nforce = \"F\n"), defaults); err == nil || !strings.Contains(err.Error(), "keys.toml:2") {
		t.Errorf("err %v, want keys.toml:2", err)
	}
}
