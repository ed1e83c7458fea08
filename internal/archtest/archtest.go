// Package archtest holds whale's packages to the import table of the
// design card (DESIGN.md, "Packages"): which of our packages, and
// which third-party modules, each package may import. The table itself
// is data in this package's test (table_test.go), which lists every
// package with `go list` and checks it; this file is the checker, which
// knows no package of ours and can be fed any import list.
//
// The package must never import anything but the standard library: it
// judges the tree, it is not part of it.
package archtest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Package is one package's production imports (not its tests'), as `go
// list -f '{{.ImportPath}} {{.Imports}}'` prints them: Path relative to
// the module ("core/store"), Imports as written (full paths).
type Package struct {
	Path    string
	Imports []string
}

// Rule is one row of the table: the packages at or under Path (the
// longest matching Path wins) may import the standard library, the
// module's packages that May names and Deny does not, and the
// third-party modules that Modules names.
//
// An entry of May or Deny names a package and everything under it
// ("core/engine" covers core/engine and core/engine/x); "core/*" is any
// package under core. An entry of Modules is a module path prefix
// ("gonum.org/v1/gonum"); "*" is any module.
type Rule struct {
	Path    string
	May     []string
	Deny    []string
	Modules []string
}

// Exception is a known violation that another piece of work will remove:
// Import is empty for a package that breaks the top-level rule. Reason
// says what removes it and under which issue; Check reports an exception
// that no longer matches anything, so that it gets deleted.
type Exception struct {
	Package, Import string
	Reason          string
}

// Table is the whole import table of a module.
type Table struct {
	Module string // the module path ("whale")
	// TopLevel lists the directories packages may live under.
	TopLevel []string
	// Everyone lists the module's packages any package may import (the
	// small helpers under internal/).
	Everyone []string
	// TestOnly lists the module's test helpers (modeltest, metricstest,
	// longtests): no package may import them outside its tests.
	TestOnly []string
	Rules    []Rule
}

// Violation is one forbidden import (or a package outside the table).
type Violation struct {
	Package string // relative to the module
	Import  string // as written; empty when the package itself is misplaced
	Rule    string // the rule it breaks, in words
}

func (v Violation) String() string {
	if v.Import == "" {
		return fmt.Sprintf("%s: %s", v.Package, v.Rule)
	}
	return fmt.Sprintf("%s imports %s: forbidden by %s", v.Package, v.Import, v.Rule)
}

// Check returns every import of pkgs that t forbids and no exception
// covers (sorted by package, then import), and the exceptions that
// matched nothing.
func Check(t Table, pkgs []Package, exceptions []Exception) (violations []Violation, stale []Exception) {
	used := make([]bool, len(exceptions))
	excepted := func(v Violation) bool {
		for i, e := range exceptions {
			if e.Package == v.Package && e.Import == v.Import {
				used[i] = true
				return true
			}
		}
		return false
	}
	for _, p := range pkgs {
		for _, v := range t.check(p) {
			if !excepted(v) {
				violations = append(violations, v)
			}
		}
	}
	sort.SliceStable(violations, func(i, j int) bool {
		a, b := violations[i], violations[j]
		return a.Package < b.Package || a.Package == b.Package && a.Import < b.Import
	})
	for i, e := range exceptions {
		if !used[i] {
			stale = append(stale, e)
		}
	}
	return violations, stale
}

// check returns p's violations of t, exceptions not applied.
func (t Table) check(p Package) []Violation {
	var out []Violation
	if top, _, _ := strings.Cut(p.Path, "/"); !slices.Contains(t.TopLevel, top) {
		out = append(out, Violation{Package: p.Path, Rule: fmt.Sprintf("the top-level rule: packages live under %s, not %s/", strings.Join(t.TopLevel, ", "), top)})
	}
	r, ok := t.rule(p.Path)
	if !ok {
		return append(out, Violation{Package: p.Path, Rule: "the table: no row covers this package (add one to the table and to DESIGN.md)"})
	}
	for _, imp := range p.Imports {
		rel, _ := strings.CutPrefix(imp, t.Module+"/")
		switch {
		case slices.Contains(t.TestOnly, rel):
			out = append(out, Violation{Package: p.Path, Import: imp, Rule: "the test-only rule: " + rel + " is a test helper, imported by tests alone"})
		case !t.allowed(r, imp):
			out = append(out, Violation{Package: p.Path, Import: imp, Rule: describe(r)})
		}
	}
	return out
}

// rule returns the row with the longest Path that covers pkg.
func (t Table) rule(pkg string) (Rule, bool) {
	best, found := Rule{}, false
	for _, r := range t.Rules {
		if under(pkg, r.Path) && (!found || len(r.Path) > len(best.Path)) {
			best, found = r, true
		}
	}
	return best, found
}

// allowed reports whether r lets a package import imp.
func (t Table) allowed(r Rule, imp string) bool {
	if rel, ok := strings.CutPrefix(imp, t.Module+"/"); ok {
		if slices.ContainsFunc(t.Everyone, func(e string) bool { return matches(rel, e) }) {
			return true
		}
		if slices.ContainsFunc(r.Deny, func(e string) bool { return matches(rel, e) }) {
			return false
		}
		return slices.ContainsFunc(r.May, func(e string) bool { return matches(rel, e) })
	}
	if imp == t.Module {
		return slices.Contains(r.May, "*")
	}
	if isStd(imp) {
		return true
	}
	return slices.ContainsFunc(r.Modules, func(m string) bool { return m == "*" || under(imp, m) })
}

// matches reports whether the module-relative package rel is covered by
// the entry e of a rule's May or Deny.
func matches(rel, e string) bool {
	switch {
	case e == "*":
		return true
	case strings.HasSuffix(e, "/*"):
		return strings.HasPrefix(rel, strings.TrimSuffix(e, "*"))
	}
	return under(rel, e)
}

// under reports whether path is prefix or lies below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// isStd reports whether imp is in the standard library (or cgo's "C"):
// its first element has no dot, as every module path outside the
// standard library must.
func isStd(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// describe says in words what r allows.
func describe(r Rule) string {
	may := "nothing of ours"
	if len(r.May) > 0 {
		may = strings.Join(r.May, ", ")
		if len(r.Deny) > 0 {
			may += " but " + strings.Join(r.Deny, ", ")
		}
	}
	mods := "no third-party module"
	if len(r.Modules) > 0 {
		mods = strings.Join(r.Modules, ", ")
	}
	return fmt.Sprintf("the rule for %s/ (may import: std; %s; %s)", r.Path, may, mods)
}

// Deps returns every import path that the module package from (relative
// to module) reaches through pkgs' imports, itself excluded, sorted: our
// packages and the standard library's and third-party ones they import.
// Packages outside pkgs (std, third-party) are leaves: only what our own
// packages import directly is seen of them.
func Deps(module string, pkgs []Package, from string) []string {
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[module+"/"+p.Path] = p.Imports
	}
	seen := map[string]bool{}
	stack := []string{module + "/" + from}
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, imp := range imports[p] {
			if !seen[imp] {
				seen[imp] = true
				stack = append(stack, imp)
			}
		}
	}
	delete(seen, module+"/"+from)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
