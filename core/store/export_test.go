package store

import (
	"reflect"
	"unsafe"
)

// InjectFaults makes db's writes consult hook (see Fault), bbolt's own
// page writes included: those are reached through bbolt's unexported
// write function, which its own tests replace the same way. inlineLimit
// lowers InlineBlobLimit so that small blobs take the file path. bbolt's
// fsyncs are skipped: the failures tested are errors, not power cuts.
func InjectFaults(db *DB, hook func(op string) *Fault, inlineLimit int) {
	db.fault, db.inlineLimit = hook, inlineLimit
	db.bolt.NoSync = true
	f := reflect.ValueOf(db.bolt).Elem().FieldByName("ops").FieldByName("writeAt")
	if !f.IsValid() || f.Type() != reflect.TypeOf(func([]byte, int64) (int, error) { return 0, nil }) {
		panic("store test: bbolt's DB.ops.writeAt changed; update InjectFaults")
	}
	writeAt := (*func([]byte, int64) (int, error))(unsafe.Pointer(f.UnsafeAddr()))
	orig := *writeAt
	*writeAt = func(b []byte, off int64) (int, error) {
		ft := hook("page write")
		switch {
		case ft == nil:
			return orig(b, off)
		case ft.After:
			n, _ := orig(b, off)
			return n, ft.Err
		}
		n, _ := orig(b[:len(b)/2], off) // torn
		return n, ft.Err
	}
}
