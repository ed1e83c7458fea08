package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// slowGateExceptions are test files that still mark their cost by hand,
// with what removes them; the test fails on an entry that no longer
// matches, so it gets deleted.
var slowGateExceptions = map[string]string{}

// TestSlowTestsUseOneGate: a test says what it costs only through
// internal/longtests (Skip, SkipShort, Short, Enabled), never by reading
// testing.Short or WHALE_LONG_TESTS itself, so every slow test is marked
// one way.
func TestSlowTestsUseOneGate(t *testing.T) {
	root := moduleRoot(t)
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "internal/longtests/") || strings.HasPrefix(rel, "internal/archtest/") {
			return nil
		}
		uses, err := handGates(path)
		if err != nil {
			return err
		}
		if len(uses) == 0 {
			return nil
		}
		if _, ok := slowGateExceptions[rel]; ok {
			seen[rel] = true
			return nil
		}
		for _, u := range uses {
			t.Errorf("%s:%s: marks its cost by hand; use internal/longtests (SkipShort or Short for -short, Skip or Enabled for WHALE_LONG_TESTS)", rel, u)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, why := range slowGateExceptions {
		if !seen[f] {
			t.Errorf("%s no longer marks its cost by hand (%s): delete it from slowGateExceptions", f, why)
		}
	}
}

// handGates returns the positions ("line:col: what") in the Go file at
// path that read testing.Short or name WHALE_LONG_TESTS in code.
func handGates(path string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	testingName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"testing"` {
			testingName = "testing"
			if imp.Name != nil {
				testingName = imp.Name.Name
			}
		}
	}
	var out []string
	at := func(n ast.Node, what string) {
		p := fset.Position(n.Pos())
		out = append(out, strconv.Itoa(p.Line)+":"+strconv.Itoa(p.Column)+": "+what)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && testingName != "" && id.Name == testingName && n.Sel.Name == "Short" {
				at(n, "testing.Short")
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && strings.Contains(n.Value, "WHALE_LONG_TESTS") {
				at(n, "the string WHALE_LONG_TESTS")
			}
		}
		return true
	})
	return out, nil
}

// TestHandGatesFindsAPlantedGate: a file that reads testing.Short (under
// any import name) or names the variable is caught; comments are not.
func TestHandGatesFindsAPlantedGate(t *testing.T) {
	src := `package p

import (
	"os"
	tst "testing"
)

// WHALE_LONG_TESTS in a comment is fine.
func TestX(t *tst.T) {
	if tst.Short() || os.Getenv("WHALE_LONG_TESTS") != "" {
		t.Skip()
	}
}
`
	path := filepath.Join(t.TempDir(), "x_test.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := handGates(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "10:") || !strings.Contains(got[0], "testing.Short") || !strings.Contains(got[1], "WHALE_LONG_TESTS") {
		t.Fatalf("found %q; want testing.Short and the variable, both on line 10", got)
	}
}
