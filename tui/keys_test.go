package tui

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"
)

func keysFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRemappedForceKey: with force = "F" in keys.toml, F asks to force
// and f does nothing; the help screen and the footer say F.
func TestRemappedForceKey(t *testing.T) {
	km, err := LoadKeys(keysFile(t, "force = \"F\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctl := &fakeControl{}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := New(Options{RunID: "math-test", History: script(t), Control: ctl, Keys: &km,
		Now: func() time.Time { return t0.Add(75 * time.Second) }})
	if v := m.View(); !strings.Contains(v, "F force") || strings.Contains(v, "f force") {
		t.Errorf("footer does not name F as force:\n%s", v)
	}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	wait := func(ok func(string) bool) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return ok(string(b)) },
			teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	tm.Send(keyMsg("f"))
	tm.Send(keyMsg("?"))
	// The help screen is up only if f did not open the question first
	// (a question takes the next key).
	var seen bytes.Buffer
	wait(func(s string) bool { seen.WriteString(s); return strings.Contains(seen.String(), "this key map") })
	if strings.Contains(seen.String(), "phase now? y/n") {
		t.Error("f still asks to force")
	}
	if !helpLine(seen.String(), "F", "force a phase switch") {
		t.Errorf("the help screen does not show F for force:\n%s", seen.String())
	}
	tm.Send(keyMsg("1")) // any key closes the help
	tm.Send(keyMsg("F"))
	seen.Reset()
	wait(func(s string) bool { seen.WriteString(s); return strings.Contains(seen.String(), "phase now? y/n") })
	tm.Send(keyMsg("y"))
	tm.Send(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")})
	tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second))
	if len(ctl.sent) != 1 || ctl.sent[0].Kind != "force" {
		t.Fatalf("sent %v, want one force (from F, not f)", ctl.sent)
	}
}

// helpLine says whether out has a help line with keys k and a
// description that begins with desc.
func helpLine(out, k, desc string) bool {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && f[0] == k && strings.Contains(l, desc) {
			return true
		}
	}
	return false
}

func TestConflictingKeysAreRefusedNamingBoth(t *testing.T) {
	p := keysFile(t, "# mine\nforce = \"q\"\n")
	_, err := LoadKeys(p)
	if err == nil {
		t.Fatal("force = q beside quit's q was accepted")
	}
	if want := `key "q" is bound to both force (` + p + `:2) and quit (default)`; !strings.Contains(err.Error(), want) {
		t.Errorf("err %v, want %q", err, want)
	}
	// A pane's key may repeat in another pane.
	if _, err := LoadKeys(keysFile(t, "export = \"x\"\n")); err != nil {
		t.Errorf("x in harnesses and in checkpoints: %v", err)
	}
}

func TestDefaultKeysAreTheREADMEs(t *testing.T) {
	if _, err := LoadKeys(filepath.Join(t.TempDir(), "none.toml")); err != nil {
		t.Fatal(err)
	}
	if got := keys.Force.Keys(); len(got) != 1 || got[0] != "f" {
		t.Errorf("default force keys %v", got)
	}
}

// The README names keys.toml's actions, every one and only those.
func TestREADMENamesTheKeysFileActions(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "The actions: ")
	if i < 0 {
		t.Fatal("README does not list keys.toml's actions (\"The actions: \")")
	}
	s = s[i:]
	j := strings.Index(s, "; keys are")
	if j < 0 {
		t.Fatal("README's list of actions does not end with \"; keys are\"")
	}
	s = s[:j]
	s = regexp.MustCompile(`\(([^)]*)\)`).ReplaceAllString(s, "") // (c), (the panes)
	var got []string
	for _, m := range regexp.MustCompile("`([a-z]+)`").FindAllStringSubmatch(s, -1) {
		got = append(got, m[1])
	}
	var want []string
	for _, a := range keyActions {
		want = append(want, a.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the README lists actions %v, keys.toml has %v", got, want)
	}
}

// The panes' hints and the questions name the keys in force.
func TestHintsNameTheKeysInForce(t *testing.T) {
	km, err := LoadKeys(keysFile(t, "export = \"E\"\nyes = \"j\"\ncheckpoints = \"0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{RunID: "math-test", History: script(t), Control: &fakeControl{}, Keys: &km, Fork: func(string) {}})
	press(m, "4")
	if strings.Contains(m.View(), "E export") {
		t.Fatal("4 still opens the checkpoints pane")
	}
	press(m, "0")
	v := m.View()
	if !strings.Contains(v, "E export") || !strings.Contains(v, "(asks j/n)") {
		t.Errorf("the checkpoints pane's hint does not name E and j:\n%s", v)
	}
	press(m, "f")
	if v := m.View(); !strings.Contains(v, "phase now? j/n") {
		t.Errorf("the question does not name j:\n%s", v)
	}
}
