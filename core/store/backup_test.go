package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A run writing to the workspace — events, resume points whose file blobs
// replace (and delete) the previous ones — goes on while it is backed up,
// both by Backup in the same process and, on request, for a process that
// cannot open the locked file. Each copy passes Check and holds a resume
// point whose blobs it has.
func TestBackupWhileARunWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.db")
	db, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CreateRun("r", []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	stop, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() { // the run
		defer wg.Done()
		prev := ""
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			big := make([]byte, InlineBlobLimit+1)
			big[0], big[1] = byte(i), byte(i>>8)
			h, err := db.PutBlob(big)
			if err == nil {
				_, err = db.AppendEvents("r", []byte(fmt.Sprintf(`{"i":%d}`, i)))
			}
			if err == nil {
				err = db.SetResumePoint("r", "running", []byte(fmt.Sprintf(`{"weights":%q}`, h)), []string{h}, 0)
			}
			if err == nil && prev != "" {
				err = db.DeleteBlob(prev)
			}
			if err != nil {
				werr = err
				if i == 0 {
					close(started)
				}
				return
			}
			prev = h
			if i == 0 {
				close(started) // a resume point stands: the copies must hold one
			}
		}
	}()
	<-started
	var outs []string
	for i := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("same-process-%d.db", i))
		if _, err := db.Backup(out); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
		out = filepath.Join(dir, fmt.Sprintf("other-process-%d.db", i))
		if _, err := OpenReadOnly(path, 50*time.Millisecond); !errors.Is(err, ErrInUse) {
			t.Fatalf("a second open of a workspace open for writing: %v, want ErrInUse", err)
		}
		info, err := RequestBackup(path, out, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Hot || info.BlobFiles < 1 || info.BlobFiles > 2 {
			t.Fatalf("requested backup: %+v, want hot, with the blob file of its resume point (and the next one's, written before the point moves)", info)
		}
		outs = append(outs, out)
	}
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatalf("the run failed during backups: %v", werr)
	}
	for _, out := range outs {
		b, err := OpenReadOnly(out, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rep := b.Check()
		r, err := b.GetRun("r")
		b.Close()
		if err != nil || len(rep.Problems) > 0 || rep.Events == 0 {
			t.Fatalf("%s: %v, %d events, problems %+v", out, err, rep.Events, rep.Problems)
		}
		if len(r.Cursor) == 0 {
			t.Fatalf("%s: no resume point", out)
		}
	}
	if _, err := db.Backup(outs[0]); err == nil {
		t.Fatal("backup over an existing file accepted")
	}
}
