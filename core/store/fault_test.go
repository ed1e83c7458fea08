package store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"whale/core/bundle"
	"whale/core/chat"
	"whale/core/ckpt"
	"whale/core/engine"
	"whale/core/model"
	"whale/core/model/modeltest"
	"whale/core/store"
	"whale/core/tokenizer"
	"whale/data"
	"whale/data/domains"
	"whale/harnesses"
	"whale/internal/longtests"
	"whale/kernels"
)

// faultModel is the engine tests' model: tiny, so a run takes a second.
var faultModel = modeltest.Config()

// faultRun is one tiny run's setting: its configuration (with its
// starting model recorded as a file, as 'whale run --model F' records it)
// and an environment to run it in, with or without the model.
type faultRun struct {
	cfg  engine.Config
	file string
	dom  data.Domain // generated once: its tasks are the same every time
}

func newFaultRun(t *testing.T) faultRun {
	t.Helper()
	cfg, err := engine.Preset("tiny", "math")
	if err != nil {
		t.Fatal(err)
	}
	// One round, sized down until a run takes a tenth of a second: each
	// of its writes is failed in turn.
	cfg.MaxRounds, cfg.TrainTasks, cfg.ValTasks, cfg.AuditTasks, cfg.TestTasks, cfg.Candidates = 1, 8, 2, 1, 2, 1
	m, err := model.New(faultModel, kernels.NewCPU(), 5)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "start.safetensors")
	if err := ckpt.SaveModel(file, m, ckpt.F32, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	sum := sha256.Sum256(b)
	cfg.Start = &engine.StartModel{Kind: engine.StartFile, Name: file, SHA256: hex.EncodeToString(sum[:])}
	dom, err := domains.Open("math", 1)
	if err != nil {
		t.Fatal(err)
	}
	return faultRun{cfg: cfg, file: file, dom: dom}
}

func (fr faultRun) env(t *testing.T, db *store.DB, withModel bool) engine.Env {
	t.Helper()
	dom := fr.dom
	tmpl, err := chat.NewTemplate(tokenizer.Bytes{})
	if err != nil {
		t.Fatal(err)
	}
	env := engine.Env{Domain: dom, Store: db, Policy: chat.Tokenize(harnesses.NewMixed(dom, 2), tmpl)}
	if withModel {
		m, _, err := ckpt.LoadModel(fr.file, kernels.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		if env.Bundle, err = bundle.New(m, tokenizer.Bytes{}, nil, bundle.Generation{}, fr.file); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// start runs a new run to its end, or to the first error.
func (fr faultRun) start(t *testing.T, db *store.DB) (engine.Summary, error) {
	e, err := engine.New(fr.cfg, fr.env(t, db, true), "s")
	if err != nil {
		return engine.Summary{}, err
	}
	return e.Run(context.Background())
}

func openStore(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// faultKinds are the failures a write can meet: out of space or an I/O
// error, before anything is written (a blob file torn halfway, a bbolt
// page write torn halfway) or after (the bytes reached the disk, yet the
// write — like an fsync — reports the error).
var faultKinds = []struct {
	name string
	err  syscall.Errno
	late bool
}{{"ENOSPC", syscall.ENOSPC, false}, {"EIO", syscall.EIO, false}, {"ENOSPC-after", syscall.ENOSPC, true}, {"EIO-after", syscall.EIO, true}}

// TestFailingWritesNeverStrandARun fails the N-th write of a tiny run —
// every transaction commit, bbolt page write, blob file write, fsync and
// rename in turn, for every N — then, as a person would after freeing
// space, reopens the workspace and resumes the run with no flags (or
// starts it again when it was never recorded). Every time: whale check
// finds nothing damaged or half-written, no temporary blob file is left,
// and the final summary (final weights hash included) is the
// uninterrupted run's, byte for byte. Each N meets one kind of failure in
// turn; WHALE_LONG_TESTS tries all four for every N.
func TestFailingWritesNeverStrandARun(t *testing.T) {
	fr := newFaultRun(t)
	dir := t.TempDir()

	// The uninterrupted run, counting its writes.
	clean := openStore(t, filepath.Join(dir, "clean.db"))
	ops := map[string]int{}
	var order []string
	store.InjectFaults(clean, func(op string) *store.Fault { ops[op]++; order = append(order, op); return nil }, 4096)
	tClean := time.Now()
	want, err := fr.start(t, clean)
	clean.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want.FinalWeights == "" {
		t.Fatal("the summary names no final weights")
	}
	wantJSON, _ := json.Marshal(want)
	t.Logf("an uninterrupted run makes %d writes in %v: %v", len(order), time.Since(tClean).Round(time.Millisecond), ops)
	for _, op := range []string{"commit", "page write", "blob write", "blob sync", "blob rename"} {
		if ops[op] == 0 {
			t.Fatalf("the run made no %q: the test would not cover it", op)
		}
	}

	// In CI: every commit and blob write, and every fifth of bbolt's page
	// writes (a commit's page writes fail alike), one kind of failure each.
	// WHALE_LONG_TESTS: every write, all four kinds. -short (the race
	// pass): every tenth write.
	long := longtests.Enabled()
	kinds := 1
	if long {
		kinds = len(faultKinds)
	}
	t0 := time.Now()
	tried, pages := 0, 0
	for n := 1; n <= len(order); n++ {
		if longtests.Short() && !long {
			if n%10 != 1 {
				continue
			}
		} else if order[n-1] == "page write" {
			if pages++; !long && pages%5 != 1 {
				continue
			}
		}
		tried++
		for k := range kinds {
			kind := faultKinds[(n+k)%len(faultKinds)]
			what := fmt.Sprintf("write %d of %d (%s) failing with %s", n, len(order), order[n-1], kind.name)
			path := filepath.Join(dir, fmt.Sprintf("n%d-%d.db", n, k))
			db := openStore(t, path)
			seen := 0
			store.InjectFaults(db, func(op string) *store.Fault {
				if seen++; seen == n {
					return &store.Fault{Err: fmt.Errorf("write %s: %w", op, kind.err), After: kind.late}
				}
				return nil
			}, 4096)
			_, err := fr.start(t, db)
			db.Close()
			if err == nil {
				t.Fatalf("%s: the run did not fail", what)
			}
			if !strings.Contains(err.Error(), kind.err.Error()) {
				t.Fatalf("%s: the run failed with %v, which does not say why", what, err)
			}

			// Space freed: nothing is damaged or half-written.
			ro, err := store.OpenReadOnly(path, time.Second)
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			rep := ro.Check()
			engine.CheckReferences(rep)
			ro.Close()
			if len(rep.Problems) > 0 {
				t.Fatalf("%s: whale check: %+v", what, rep.Problems)
			}
			if tmps, _ := filepath.Glob(path + ".blobs/*.tmp"); len(tmps) > 0 {
				t.Fatalf("%s: temporary blob files left: %v", what, tmps)
			}

			db = openStore(t, path)
			var got engine.Summary
			if _, err := db.GetRun("s"); err != nil {
				got, err = fr.start(t, db) // never recorded: the person runs it again
				if err != nil {
					t.Fatalf("%s: run again: %v", what, err)
				}
			} else {
				e, err := engine.Resume(fr.env(t, db, false), kernels.NewCPU(), "s")
				if err != nil {
					t.Fatalf("%s: resume: %v", what, err)
				}
				if got, err = e.Run(context.Background()); err != nil {
					t.Fatalf("%s: resumed run: %v", what, err)
				}
			}
			db.Close()
			if gotJSON, _ := json.Marshal(got); !bytes.Equal(gotJSON, wantJSON) {
				t.Fatalf("%s: the resumed run's summary differs\n got %s\nwant %s", what, gotJSON, wantJSON)
			}
			os.RemoveAll(path + ".blobs")
			os.Remove(path)
		}
	}
	t.Logf("%d of %d writes failed × %d kinds, each resumed to the same summary, in %v", tried, len(order), kinds, time.Since(t0).Round(time.Second))
}
