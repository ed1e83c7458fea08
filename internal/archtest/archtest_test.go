package archtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTreeFollowsDesignTable lists every package of the module with `go
// list` — the default build and the cuda-tagged one, whose files import
// the CUDA driver — and checks each one's production imports against the
// design table (table_test.go).
func TestTreeFollowsDesignTable(t *testing.T) {
	pkgs := listTree(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; expected the whole tree", len(pkgs))
	}
	violations, stale := Check(design, pkgs, knownViolations)
	for _, v := range violations {
		t.Errorf("%s", v)
	}
	for _, e := range stale {
		t.Errorf("known violation %s -> %q (%s) no longer happens: delete it from knownViolations", e.Package, e.Import, e.Reason)
	}
	// Every package has a row; a row nothing uses may be a package that
	// was renamed without its row (kernels/kerneltest and kernels/bench
	// are rows for packages being written).
	for _, r := range design.Rules {
		if !slices.ContainsFunc(pkgs, func(p Package) bool { return under(p.Path, r.Path) }) {
			t.Logf("row %s/ matches no package today", r.Path)
		}
	}
}

// listTree returns every package of the module with the union of its
// imports over the default and the cuda-tagged build.
func listTree(t *testing.T) []Package {
	t.Helper()
	root := moduleRoot(t)
	const format = `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`
	byPath := map[string]*Package{}
	var order []string
	for _, args := range [][]string{
		{"list", "-f", format, "./..."},
		// -e: the cuda build lists even where the CUDA module is not in
		// the module cache; its imports are read from the files.
		{"list", "-e", "-tags", "cuda", "-f", format, "./..."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			rel, ok := strings.CutPrefix(f[0], design.Module+"/")
			if !ok {
				t.Fatalf("go list: package %s is outside module %s", f[0], design.Module)
			}
			p := byPath[rel]
			if p == nil {
				p = &Package{Path: rel}
				byPath[rel] = p
				order = append(order, rel)
			}
			for _, imp := range f[1:] {
				if !slices.Contains(p.Imports, imp) {
					p.Imports = append(p.Imports, imp)
				}
			}
		}
	}
	pkgs := make([]Package, 0, len(order))
	for _, rel := range order {
		pkgs = append(pkgs, *byPath[rel])
	}
	return pkgs
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		t.Fatalf("go env GOMOD: not inside a module")
	}
	return filepath.Dir(mod)
}

// planted is a small made-up tree that follows the design table.
func planted() []Package {
	return []Package{
		{Path: "kernels", Imports: []string{"fmt", "golang.org/x/sys/cpu", "unsafe"}},
		{Path: "core/model", Imports: []string{"math", "whale/kernels", "whale/core/policy"}},
		{Path: "core/store", Imports: []string{"go.etcd.io/bbolt", "go.etcd.io/bbolt/errors", "whale/internal/readcap"}},
		{Path: "core/engine", Imports: []string{"whale/core/store", "whale/core/model", "whale/harnesses", "whale/data"}},
		{Path: "core/bundle", Imports: []string{"whale/core/ckpt", "whale/core/basemodel"}},
		{Path: "data/chess", Imports: []string{"whale/data", "github.com/corentings/chess/v2"}},
		{Path: "tui/keymap", Imports: []string{"github.com/charmbracelet/bubbles/key", "github.com/BurntSushi/toml"}},
		{Path: "cmd/whale", Imports: []string{"whale/core/pretrain", "github.com/spf13/cobra"}},
	}
}

// TestCheckPassesAConformingTree: the planted tree breaks no rule.
func TestCheckPassesAConformingTree(t *testing.T) {
	if v, stale := Check(design, planted(), nil); len(v) != 0 || len(stale) != 0 {
		t.Fatalf("violations %v, stale exceptions %v; want none", v, stale)
	}
}

// TestCheckNamesAPlantedForbiddenImport plants one forbidden import of
// each kind into the made-up tree and wants exactly that one reported,
// naming the package, the import and the rule.
func TestCheckNamesAPlantedForbiddenImport(t *testing.T) {
	for _, c := range []struct {
		name     string
		pkg, imp string
		rule     string // must appear in the message
	}{
		{"loading a model links the trainer", "core/bundle", "whale/core/pretrain", "the rule for core/bundle/"},
		{"the model knows a tokenizer", "core/model", "whale/core/tokenizer", "the rule for core/model/"},
		{"the engine imports what the row denies", "core/engine", "whale/core/attach", "but core/pretrain, core/attach"},
		{"kernels import a third-party module", "kernels", "github.com/charmbracelet/lipgloss", "the rule for kernels/"},
		{"the store imports a second module", "core/store", "github.com/dlclark/regexp2", "go.etcd.io/bbolt"},
		{"a data subpackage reaches the engine", "data/chess", "whale/core/engine", "the rule for data/"},
		{"a leaf imports anything of ours", "core/policy", "whale/core/model", "nothing of ours"},
		{"production code imports a test helper", "core/engine", "whale/core/model/modeltest", "the test-only rule"},
		{"a helper every tree may use is test-only", "core/store", "whale/internal/longtests", "the test-only rule"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pkgs := planted()
			found := false
			for i := range pkgs {
				if pkgs[i].Path == c.pkg {
					pkgs[i].Imports = append(pkgs[i].Imports, c.imp)
					found = true
				}
			}
			if !found {
				pkgs = append(pkgs, Package{Path: c.pkg, Imports: []string{c.imp}})
			}
			v, _ := Check(design, pkgs, nil)
			if len(v) != 1 {
				t.Fatalf("got %d violations %v; want exactly the planted one", len(v), v)
			}
			msg := v[0].String()
			for _, want := range []string{c.pkg + " imports " + c.imp, c.rule} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
		})
	}
}

// TestCheckRefusesAPackageOutsideTheTable: a new top-level directory, and
// a package no row covers, are each reported.
func TestCheckRefusesAPackageOutsideTheTable(t *testing.T) {
	table := design
	table.Rules = slices.DeleteFunc(slices.Clone(design.Rules), func(r Rule) bool { return r.Path == "internal" })
	pkgs := append(planted(), Package{Path: "utils", Imports: []string{"fmt"}}, Package{Path: "internal/x"})
	v, _ := Check(table, pkgs, nil)
	got := fmt.Sprint(v)
	if len(v) != 3 || !strings.Contains(got, "utils: the top-level rule") || !strings.Contains(got, "utils: the table: no row") ||
		!strings.Contains(got, "internal/x: the table: no row") {
		t.Fatalf("violations %s; want utils outside the top level and without a row, internal/x without a row", got)
	}
}

// TestCheckAppliesExceptionsAndReportsStaleOnes: an exception hides its
// violation and only it; one that matches nothing comes back as stale.
func TestCheckAppliesExceptionsAndReportsStaleOnes(t *testing.T) {
	pkgs := planted()
	pkgs = append(pkgs, Package{Path: "core/weights", Imports: []string{"whale/core/model", "whale/harnesses", "whale/core/store"}})
	exc := []Exception{
		{Package: "core/weights", Import: "whale/harnesses", Reason: "planted"},
		{Package: "core/weights", Import: "whale/data", Reason: "matches nothing"},
	}
	v, stale := Check(design, pkgs, exc)
	if len(v) != 1 || v[0].Import != "whale/core/store" {
		t.Errorf("violations %v; want only core/weights -> whale/core/store", v)
	}
	if len(stale) != 1 || stale[0].Import != "whale/data" {
		t.Errorf("stale %v; want only the whale/data exception", stale)
	}
}

// TestLoadingAModelLinksNoTrainer: opening a --model (core/bundle, and the
// embedded model of core/basemodel) reaches neither the trainer
// (core/pretrain) nor Starlark, the harnesses or a domain, directly or
// through anything it imports.
func TestLoadingAModelLinksNoTrainer(t *testing.T) {
	pkgs := listTree(t)
	for _, from := range []string{"core/bundle", "core/basemodel"} {
		deps := Deps(design.Module, pkgs, from)
		if !slices.Contains(deps, "whale/core/model") {
			t.Fatalf("%s reaches %v, not even core/model: the import graph was not read", from, deps)
		}
		for _, d := range deps {
			for _, bad := range []string{"whale/core/pretrain", "whale/harnesses", "whale/data", "go.starlark.net"} {
				if under(d, bad) {
					t.Errorf("%s reaches %s: loading a model must not link the trainer, Starlark or a domain", from, d)
				}
			}
		}
	}
}

// TestDepsFollowsImportsTransitively on a made-up graph: a → b → c, c →
// fmt, d unreached.
func TestDepsFollowsImportsTransitively(t *testing.T) {
	pkgs := []Package{
		{Path: "a", Imports: []string{"m/b"}},
		{Path: "b", Imports: []string{"m/c", "strings"}},
		{Path: "c", Imports: []string{"fmt", "m/b"}},
		{Path: "d", Imports: []string{"go.starlark.net/starlark"}},
	}
	got := Deps("m", pkgs, "a")
	want := []string{"fmt", "m/b", "m/c", "strings"}
	if !slices.Equal(got, want) {
		t.Fatalf("Deps(a) = %v, want %v", got, want)
	}
}
