package harnesses

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"whale/data"
)

// lib holds the built-in harnesses, lib/<domain>/<name>.star.
//
//go:embed lib
var lib embed.FS

// Builtin returns the source of a built-in harness ("h0") of a domain.
func Builtin(domain, name string) (string, error) {
	name = strings.TrimSuffix(name, ".star")
	b, err := lib.ReadFile(path.Join("lib", domain, name+".star"))
	if err != nil {
		return "", fmt.Errorf("harnesses: no built-in harness %s for domain %s (have: %s)", name, domain, strings.Join(BuiltinNames(domain), ", "))
	}
	return string(b), nil
}

// BuiltinNames lists a domain's built-in harnesses.
func BuiltinNames(domain string) []string {
	entries, err := fs.ReadDir(lib, path.Join("lib", domain))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".star"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// LoadBuiltin loads and validates a built-in harness of d.
func LoadBuiltin(d data.Domain, name string) (*Harness, error) {
	src, err := Builtin(d.Name(), name)
	if err != nil {
		return nil, err
	}
	return Load(path.Join(d.Name(), strings.TrimSuffix(name, ".star")+".star"), src, EnvOf(d))
}
