package data

import "fmt"

// BadLine is one malformed record of an imported file.
type BadLine struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Field  string `json:"field,omitempty"`
	Reason string `json:"reason"`
}

func (b BadLine) Error() string {
	if b.Field != "" {
		return fmt.Sprintf("%s:%d: field %s: %s", b.File, b.Line, b.Field, b.Reason)
	}
	return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Reason)
}

// ImportOptions control how an importer turns a file into a Domain.
type ImportOptions struct {
	// Seed deals the imported tasks into splits (see SplitTasks).
	Seed uint64
	// Sizes of the splits; zero means DefaultSizes scaled to the file.
	Sizes Sizes
	// SkipBad uses the good records and lists the bad ones instead of
	// failing on the first bad record. Without it an importer returns the
	// first BadLine as its error and no Domain.
	SkipBad bool
	// Themes keeps only the records carrying at least one of these themes
	// (chess: lichess puzzle themes such as mateIn1 or hangingPiece); empty
	// keeps every record. Importers without themes refuse a non-empty list.
	Themes []string
}
