package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"whale/core/engine"
	"whale/core/metrics"
	"whale/core/store"
)

func init() { register(newMetricsCmd) }

func newMetricsCmd() *cobra.Command {
	var dbPath, format, out string
	c := &cobra.Command{
		Use:   "metrics RUN",
		Short: "Write a run's scalars (finished or live) as JSON lines, CSV or TensorBoard event files",
		Long: "Reads the run's stored events and writes every scalar: per weight step (loss, kept fraction,\n" +
			"token entropy, lr, reward), per harness iteration (best score, paired gain, calls), per evaluation\n" +
			"(mean@k, maj@k, pass@k per split), per phase boundary, ledger counts and the final scores. The x axis\n" +
			"is model calls (the budget spent); the weight step, harness iteration and round are kept beside it.\n" +
			"--format tensorboard writes OUT/RUN/events.out.tfevents.* (--out is a folder, default tensorboard),\n" +
			"which TensorBoard and 'wandb sync --sync-tensorboard' read. While another whale process runs the\n" +
			"workspace, the events come from it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(metrics.Formats, format) {
				return usageError{fmt.Errorf("--format %q: want %s", format, strings.Join(metrics.Formats, ", "))}
			}
			r, evs, err := storedRunEvents(dbPath, args[0])
			if err != nil {
				return err
			}
			pts, err := metrics.FromEvents(evs)
			if err != nil {
				return err
			}
			if format == "tensorboard" {
				if out == "" || out == "-" {
					out = "tensorboard"
				}
				path, err := writeTensorBoard(out, r, pts)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%d scalars of run %s: %s\n", len(pts), r.ID, path)
				return nil
			}
			write := metrics.WriteJSONL
			if format == "csv" {
				write = metrics.WriteCSV
			}
			if out == "" || out == "-" {
				return write(cmd.OutOrStdout(), pts)
			}
			return writeFileWith(out, func(w io.Writer) error { return write(w, pts) })
		},
	}
	dbFlag(c.Flags(), &dbPath)
	c.Flags().StringVar(&format, "format", "jsonl", "jsonl, csv or tensorboard")
	c.Flags().StringVarP(&out, "out", "o", "", "file to write (default: stdout); with --format tensorboard a folder (default: tensorboard)")
	return c
}

// storedRunEvents reads a run and its events from the workspace without
// writing to it, or from the process that holds it.
func storedRunEvents(dbPath, id string) (store.Run, []engine.Event, error) {
	if _, err := os.Stat(dbPath); err != nil {
		return store.Run{}, nil, fmt.Errorf("workspace %s: %w", dbPath, err)
	}
	db, err := store.OpenReadOnly(dbPath, time.Second)
	if err != nil {
		cl, aerr := attachTo(dbPath, err)
		if aerr != nil {
			return store.Run{}, nil, aerr
		}
		info, err := cl.Run(id)
		if err != nil {
			return store.Run{}, nil, err
		}
		st, err := cl.Follow(id, 0, 1)
		if err != nil {
			return store.Run{}, nil, err
		}
		st.Close()
		return info.Run, st.History, nil
	}
	defer db.Close()
	r, err := db.GetRun(id)
	if err != nil {
		return r, nil, err
	}
	evs, err := engine.StoredEvents(db, id, 0, 0)
	return r, evs, err
}

// writeFileWith writes path whole or not at all (a temporary file renamed
// over it).
func writeFileWith(path string, fill func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := fill(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// tensorBoardPath is where a run's event file goes under dir: one folder
// per run id, one file per run named as TensorBoard expects
// ("tfevents" in the name), stamped with the run's creation time.
func tensorBoardPath(dir string, r store.Run) (string, error) {
	if r.ID == "" || strings.ContainsAny(r.ID, `/\`) || r.ID == "." || r.ID == ".." {
		return "", fmt.Errorf("run id %q cannot name a folder", r.ID)
	}
	return filepath.Join(dir, r.ID, fmt.Sprintf("events.out.tfevents.%d.whale", r.Created.Unix())), nil
}

// wallTime is the wall time of a run's TensorBoard records.
func wallTime(r store.Run) float64 { return float64(r.Created.UnixNano()) / 1e9 }

// writeTensorBoard writes a run's whole event file, returning its path.
func writeTensorBoard(dir string, r store.Run, pts []metrics.Point) (string, error) {
	path, err := tensorBoardPath(dir, r)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, writeFileWith(path, func(w io.Writer) error {
		tb, err := metrics.NewTensorBoard(w, wallTime(r))
		if err != nil {
			return err
		}
		return tb.Write(pts)
	})
}

// tensorBoardFlag is --tensorboard DIR on run, resume, tui and bench
// conditions.
type tensorBoardFlag struct{ dir string }

func (t *tensorBoardFlag) register(f *pflag.FlagSet) {
	f.StringVar(&t.dir, "tensorboard", "", "also write the scalars of every run this command advances as TensorBoard event files, DIR/RUN/events.out.tfevents.* (x axis: model calls), as they are stored ('whale metrics RUN --format tensorboard' writes the same file afterwards)")
}

// follow starts writing the event files of the runs this process advances
// in db; stop writes what is left and reports the first error. Without
// the flag it does nothing.
func (t *tensorBoardFlag) follow(db *store.DB, log io.Writer) (stop func() error) {
	if t.dir == "" {
		return func() error { return nil }
	}
	fw := &tbFollower{db: db, dir: t.dir, runs: map[string]*tbRun{}}
	err := fw.start()
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if err != nil {
			return
		}
		tick := time.NewTicker(tbEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				if err = fw.sync(); err != nil {
					fmt.Fprintf(log, "tensorboard: %v (no more event files written)\n", err)
					return
				}
			}
		}
	}()
	var once sync.Once
	return func() error {
		once.Do(func() {
			close(quit)
			<-done
			if err == nil {
				err = fw.sync()
			}
			err = errors.Join(err, fw.close())
		})
		if err != nil {
			return fmt.Errorf("--tensorboard %s: %w", t.dir, err)
		}
		return nil
	}
}

// tbEvery is how often the event files catch up with the store.
const tbEvery = 2 * time.Second

// tbFollower writes event files for the runs of a workspace that gain
// events while it runs.
type tbFollower struct {
	db   *store.DB
	dir  string
	runs map[string]*tbRun
}

// tbRun is one run's open event file.
type tbRun struct {
	r    store.Run
	seen uint64 // stored events at start (the file is written once it grows past them)
	next uint64 // first event not yet in the file
	f    *os.File
	tb   *metrics.TensorBoard
	x    metrics.Extractor
}

func lastSeq(db *store.DB, id string) (uint64, error) {
	var last uint64
	err := db.Events(id, 0, func(seq uint64, _ []byte) error { last = seq; return nil })
	return last, err
}

// errFound stops a scan at its first event.
var errFound = errors.New("found")

// hasEventsFrom reports whether run has an event numbered from or later,
// reading at most that one.
func hasEventsFrom(db *store.DB, id string, from uint64) (bool, error) {
	err := db.Events(id, from, func(uint64, []byte) error { return errFound })
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}

// start records how far every run's events go now.
func (fw *tbFollower) start() error {
	runs, err := fw.db.Runs()
	if err != nil {
		return err
	}
	for _, r := range runs {
		seen, err := lastSeq(fw.db, r.ID)
		if err != nil {
			return err
		}
		fw.runs[r.ID] = &tbRun{r: r, seen: seen}
	}
	return nil
}

// sync appends the events stored since the last sync. A run gets its
// file, written from its first event (those of earlier processes
// included: a resumed run's file holds the whole run), once it has an
// event past where it stood at start.
func (fw *tbFollower) sync() error {
	runs, err := fw.db.Runs()
	if err != nil {
		return err
	}
	for _, r := range runs {
		tr := fw.runs[r.ID]
		if tr == nil {
			tr = &tbRun{r: r}
			fw.runs[r.ID] = tr
		}
		if tr.f == nil {
			grown, err := hasEventsFrom(fw.db, r.ID, tr.seen+1)
			if err != nil {
				return err
			}
			if !grown {
				continue
			}
			path, err := tensorBoardPath(fw.dir, r)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if tr.f, err = os.Create(path); err != nil {
				return err
			}
			if tr.tb, err = metrics.NewTensorBoard(tr.f, wallTime(r)); err != nil {
				return err
			}
		}
		evs, err := engine.StoredEvents(fw.db, r.ID, tr.next, 0)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			pts, err := tr.x.Add(ev)
			if errors.Is(err, engine.ErrUnknownEvent) {
				continue
			}
			if err != nil {
				return err
			}
			if err := tr.tb.Write(pts); err != nil {
				return err
			}
			tr.next = ev.Seq + 1
		}
	}
	return nil
}

func (fw *tbFollower) close() error {
	var errs []error
	for _, tr := range fw.runs {
		if tr.f != nil {
			errs = append(errs, tr.f.Close())
		}
	}
	return errors.Join(errs...)
}

// tensorBoardOf is the --tensorboard flag of cmd (empty where it has
// none), so the shared drive loop needs no parameter for it.
func tensorBoardOf(cmd *cobra.Command) *tensorBoardFlag {
	t := &tensorBoardFlag{}
	if f := cmd.Flags().Lookup("tensorboard"); f != nil {
		t.dir = f.Value.String()
	}
	return t
}
