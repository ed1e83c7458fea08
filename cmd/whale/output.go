package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// printJSON writes v as exactly one line of JSON: with --json, the last
// line of stdout is one JSON object (or array) and nothing follows it.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode JSON output: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
