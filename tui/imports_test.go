package tui

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The workbench reads a run through core/engine's read model and talks to
// other processes through core/attach: it imports nothing else of ours
// (docs: DESIGN.md's package table), so a screen never reaches into the
// store, the trainer or the harness runtime.
// (This package's files only.)
func TestWorkbenchImportsOnlyTheReadModel(t *testing.T) {
	allowed := map[string]bool{"whale/core/engine": true, "whale/core/attach": true}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." {
			return filepath.SkipDir // sub-packages (tui/compare, …) answer for themselves
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "whale/") && !allowed[p] && !strings.HasPrefix(p, "whale/tui") {
				t.Errorf("%s imports %s: the workbench may import only core/engine and core/attach of whale", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
