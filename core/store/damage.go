package store

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged is wrapped by every error that comes from damaged bytes in
// the database file: bbolt's panics on a page it cannot make sense of, a
// memory fault reading one, a checksum or version it refuses on open, and
// a bucket the schema requires that is missing.
var ErrDamaged = errors.New("database damaged")

// DamagedError says which file is damaged, what was found, and what to do.
type DamagedError struct {
	Path  string
	Cause string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("store: %s is damaged (%s): run 'whale check --db %s' to see which runs it affects, and restore a backup made with 'whale backup' if you have one",
		e.Path, e.Cause, e.Path)
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

func (db *DB) damaged(format string, args ...any) error {
	return &DamagedError{Path: db.path, Cause: fmt.Sprintf(format, args...)}
}

// view and update are bbolt's View and Update for a file whose bytes may be
// damaged: bbolt trusts its pages and panics (or faults) on a bad one, and
// a damaged workspace must give an error that names it, never a crash.
// bbolt rolls the transaction back as the panic unwinds, so the DB stays
// usable (for whale check, say). A panic raised by a caller's callback is
// the caller's bug and goes on unchanged.
func (db *DB) view(fn func(*bolt.Tx) error) (err error) {
	defer db.recoverDamage(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return db.bolt.View(fn)
}

func (db *DB) update(fn func(*bolt.Tx) error) (err error) {
	defer db.recoverDamage(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	ft := db.injected("commit")
	if ft != nil && !ft.After {
		return ft.Err
	}
	if err := db.bolt.Update(fn); err != nil || ft == nil {
		return err
	}
	return ft.Err // the commit reached the disk, and yet its caller hears it failed
}

// guard runs fn, turning a panic from damaged bytes into an error (for
// calls into bbolt outside View and Update: open, Check, WriteTo).
func (db *DB) guard(fn func() error) (err error) {
	defer db.recoverDamage(&err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return fn()
}

func (db *DB) recoverDamage(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if !fromStoredBytes() {
		panic(r)
	}
	*err = db.damaged("%v", r)
}

// fromStoredBytes reports whether a recovered panic came from reading the
// file: raised in bbolt or in this package (a memory fault included, such
// as a page pointing past the mapped file, and a standard library function
// such as copy or fmt handed such a page's bytes by them), whose code
// panics only on a page, bucket or value that a sound file never has. It
// must be called from the deferred function, while the panicking frames
// are still on the stack.
func fromStoredBytes() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	past := false // past the panic itself and our deferred functions
	for {
		f, more := frames.Next()
		switch pkg := funcPackage(f.Function); {
		case f.Function == "runtime.gopanic" || f.Function == "runtime.sigpanic":
			past = true
		case past && !isStd(pkg):
			return pkg == "go.etcd.io/bbolt" || strings.HasPrefix(pkg, "go.etcd.io/bbolt/") || pkg == "whale/core/store"
		}
		if !more {
			return false
		}
	}
}

// funcPackage is the import path of a function's package, from its full
// name ("go.etcd.io/bbolt.(*DB).View" → "go.etcd.io/bbolt").
func funcPackage(fn string) string {
	slash := strings.LastIndex(fn, "/")
	if dot := strings.Index(fn[slash+1:], "."); dot >= 0 {
		return fn[:slash+1+dot]
	}
	return fn
}

// isStd reports whether pkg is in Go's standard library (its first path
// element has no dot), which includes the runtime.
func isStd(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return !strings.Contains(first, ".") && first != "whale" && pkg != "main"
}

// openError words bbolt's refusals of a damaged file.
func (db *DB) openError(err error) error {
	for _, e := range []error{berrors.ErrInvalid, berrors.ErrVersionMismatch, berrors.ErrChecksum, berrors.ErrInvalidMapping} {
		if errors.Is(err, e) {
			return db.damaged("%v", err)
		}
	}
	return nil
}
