// Package domains is the registry of whale's task domains: it opens a
// generated or built-in domain by name, imports a domain from a file of a
// known format, and writes or reads a domain's splits as files. The rest of
// whale reaches domains only through it.
//
// The package must never hold a domain's logic (generation, verification,
// parsing of a format): that lives in the domain's own package.
package domains

import (
	"fmt"
	"sort"
	"strings"

	"whale/data"
	"whale/data/chess"
	"whale/data/math"
	"whale/data/searchqa"
)

// Names lists the domains Open knows.
func Names() []string { return []string{math.Name, searchqa.Name, chess.Name} }

// Open returns a domain by name. math and searchqa are generated from seed
// with data.DefaultSizes; chess is the committed puzzle set (generated with
// chess.BuiltinSeed), whatever the seed, because proving mates for a fresh
// set takes long: `whale data generate --domain chess --seed S` makes one,
// which Import("splits", dir, ...) reads.
func Open(name string, seed uint64) (data.Domain, error) {
	switch name {
	case math.Name:
		return math.New(seed)
	case searchqa.Name:
		return searchqa.New(seed)
	case chess.Name:
		return chess.Builtin()
	}
	return nil, fmt.Errorf("domains: unknown domain %q (want one of %s)", name, strings.Join(Names(), ", "))
}

// Format names for Import.
const (
	FormatGSM8K   = "gsm8k"   // math: GSM8K jsonl
	FormatQA      = "qa"      // searchqa: questions jsonl and corpus jsonl
	FormatLichess = "lichess" // chess: lichess puzzle CSV
	FormatSplits  = "splits"  // any: a directory written by Generate
)

// formats maps each format to the domain it feeds.
var formats = map[string]string{
	FormatGSM8K:   math.Name,
	FormatQA:      searchqa.Name,
	FormatLichess: chess.Name,
	FormatSplits:  "",
}

// Formats lists the formats Import reads, sorted.
func Formats() []string {
	out := make([]string, 0, len(formats))
	for f := range formats {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// FormatDomain names the domain a format feeds ("" for splits, which
// records its domain in its manifest), and whether the format is known.
func FormatDomain(format string) (string, bool) {
	d, ok := formats[format]
	return d, ok
}

// Import reads a domain from files. path is one file, except for:
//   - qa: "QUESTIONS,CORPUS", the questions jsonl and the corpus jsonl
//     separated by a comma (see searchqa.ImportQA for the fields);
//   - splits: a directory written by Generate (or the chess set's own
//     WriteSplits), with manifest.json beside the split files.
//
// Bad records are handled as opts says (see data.ImportOptions); the
// splits format has no SkipBad: a hash-checked file is right or rejected.
func Import(format, path string, opts data.ImportOptions) (data.Domain, []data.BadLine, error) {
	if len(opts.Themes) > 0 && format != FormatLichess {
		return nil, nil, fmt.Errorf("domains: a theme filter needs format %s, not %q", FormatLichess, format)
	}
	switch format {
	case FormatGSM8K:
		d, bad, err := math.ImportGSM8K(path, opts)
		if err != nil {
			return nil, bad, err
		}
		return d, bad, nil
	case FormatQA:
		qpath, cpath, ok := strings.Cut(path, ",")
		if !ok || strings.TrimSpace(qpath) == "" || strings.TrimSpace(cpath) == "" {
			return nil, nil, fmt.Errorf("domains: format qa wants QUESTIONS.jsonl,CORPUS.jsonl, got %q", path)
		}
		d, bad, err := searchqa.ImportQA(strings.TrimSpace(qpath), strings.TrimSpace(cpath), opts)
		if err != nil {
			return nil, bad, err
		}
		return d, bad, nil
	case FormatLichess:
		return chess.ImportLichess(path, opts)
	case FormatSplits:
		d, err := ReadSplits(path)
		return d, nil, err
	}
	return nil, nil, fmt.Errorf("domains: unknown format %q (want one of %s)", format, strings.Join(Formats(), ", "))
}
