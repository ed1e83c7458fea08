package store

// Fault is a write that fails on purpose, in tests of what a full or
// failing disk does to a run. Err is what the write returns (wrapping
// syscall.ENOSPC or EIO, say). With After, the write happens first and
// then fails — as when fsync reports an error for data that reached the
// disk all the same — else nothing of it happens (for a blob file: half
// its bytes reach the temporary file).
type Fault struct {
	Err   error
	After bool
}

// injected asks the test's fault hook whether the write op fails: "commit"
// (a transaction), "page write" (one of bbolt's page writes, hooked by
// tests that reach into bbolt), "blob write", "blob sync", "blob rename".
func (db *DB) injected(op string) *Fault {
	if db == nil || db.fault == nil {
		return nil
	}
	return db.fault(op)
}
