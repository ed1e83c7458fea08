package store

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// verifyBeforeOpen checks what bbolt reads while opening the file (its
// meta pages and free list, whose count sizes an allocation) before bbolt
// does. It reads under a shared lock when it can take one at once; when a
// writer holds the file, bbolt's own open waits for it (and reports it in
// use), and verifyAfterOpen checks the file under bbolt's lock.
func (db *DB) verifyBeforeOpen(opts *bolt.Options) error {
	// Only a regular file is read (opening a named pipe would block).
	if fi, err := os.Stat(db.path); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(db.path)
	if err != nil {
		return nil // a new file, or bbolt's open says why not
	}
	defer f.Close()
	if !tryLockShared(f) {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	probs := verifyReader(f, fi.Size(), false)
	if len(probs) == 0 {
		return nil
	}
	if db.forCheck {
		// A damaged meta page alone still opens (bbolt takes the other);
		// a damaged free list opens without reading it.
		for _, p := range probs {
			if !p.fallback {
				opts.PreLoadFreelist = false
			}
		}
		return nil
	}
	return db.pagesDamaged(probs)
}

// verifyAfterOpen walks the whole page tree (verify.go) under bbolt's
// lock, before anything reads it. A damaged tree is refused, closing the
// file, except by OpenForCheck, which keeps the problems for Check.
func (db *DB) verifyAfterOpen() error {
	probs, err := verifyPages(db.path, true)
	if err != nil {
		db.bolt.Close()
		return fmt.Errorf("store: open %s: %w", db.path, err)
	}
	if len(probs) == 0 {
		return nil
	}
	if db.forCheck {
		db.pageProblems = probs
		return nil
	}
	db.bolt.Close()
	return db.pagesDamaged(probs)
}

func (db *DB) pagesDamaged(probs []PageProblem) error {
	what := probs[0].String()
	if len(probs) > 1 {
		what += fmt.Sprintf(", and %d more problems", len(probs)-1)
	}
	return db.damaged("%s", what)
}
