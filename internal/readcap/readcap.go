// Package readcap reads files whose size comes from outside whale (a
// model folder's config.json, tokenizer.json, weights) with a bound
// stated by the caller, and refuses what is not a regular file: /dev/zero,
// a named pipe or a directory would otherwise be read until memory runs
// out, or block for ever. It must never read more than the bound.
package readcap

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Common bounds.
const (
	// JSON is the bound of small JSON files: config.json,
	// generation_config.json (a few kB in every model whale runs).
	JSON = 1 << 20
	// Index is the bound of model.safetensors.index.json (a 70B model's
	// is under 100 kB).
	Index = 16 << 20
	// Tokenizer is the bound of a tokenizer.json (Qwen's is 11 MB),
	// compressed or not.
	Tokenizer = 256 << 20
	// Weights is the bound of one weights file: 64 GiB, past what whale's
	// float32 CPU engine can hold.
	Weights = 64 << 30
)

// ErrTooLarge is wrapped when a file is over its bound.
var ErrTooLarge = errors.New("file too large")

// File returns the contents of path, a regular file (or a link to one) of
// at most limit bytes; what names it in errors ("config.json").
func File(path string, limit int64, what string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, fi, what); err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s %s has %d bytes, over the %d this reader accepts: %w", what, path, fi.Size(), limit, ErrTooLarge)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The file may have changed since Stat: read at most limit+1 bytes.
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s %s grew past the %d bytes this reader accepts: %w", what, path, limit, ErrTooLarge)
	}
	return b, nil
}

// Reader bounds r to limit bytes: reading past them is an error naming
// what (for a decompressed stream, whose size no header tells).
func Reader(r io.Reader, limit int64, what string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over the %d bytes this reader accepts: %w", what, limit, ErrTooLarge)
	}
	return b, nil
}

func regular(path string, fi fs.FileInfo, what string) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	kind := "special file"
	switch {
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "named pipe"
	case m&fs.ModeCharDevice != 0:
		kind = "character device"
	case m&fs.ModeDevice != 0:
		kind = "device"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	}
	return fmt.Errorf("%s %s is a %s, not a regular file: whale reads only files", what, path, kind)
}
