package store_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"whale/core/store"
)

// A panic in a caller's callback is the caller's bug: it is not dressed
// up as damage, and goes on with its own value.
func TestCallerPanicIsNotDamage(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "w.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateRun("r", []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendEvents("r", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r != "caller bug" {
			t.Fatalf("recovered %v, want the caller's own panic", r)
		}
	}()
	err = db.Events("r", 0, func(uint64, []byte) error {
		var m map[string]int
		_ = fmt.Sprint(m)
		panic("caller bug")
	})
	t.Fatalf("Events returned %v after its callback panicked", err)
}
