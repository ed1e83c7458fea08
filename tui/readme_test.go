package tui

import (
	"os"
	"strings"
	"testing"
)

// The README's workbench section names every key the workbench answers
// to, as its key table writes them.
func TestREADMEKeyTableMatchesTheKeys(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## The workbench")
	if i < 0 {
		t.Fatal("README has no workbench section")
	}
	sec := s[i:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	name := map[string]string{"up": "↑", "down": "↓", "pgup": "PgUp", "pgdown": "PgDn", " ": "space"}
	all := append(keys.all(), keys.Prev, keys.Yes)
	for _, b := range all {
		for _, k := range b.Keys() {
			if n, ok := name[k]; ok {
				k = n
			}
			if k == "Y" { // y's capital, asked in the same breath
				continue
			}
			if !strings.Contains(sec, "`"+k+"`") {
				t.Errorf("the README's workbench section does not name key %q (%s)", k, b.Help().Desc)
			}
		}
	}
}
