package chess

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"

	"whale/data"
)

// BuiltinSeed and BuiltinSizes are what the committed splits were made
// with: `whale data generate --domain chess --seed 2026` reproduces them.
// The committed splits are the ladder set (GenerateLadder: mate in 1, a
// hanging piece to take, mate in 2, in LadderKinds' shares), weighted
// toward what a small model can learn to see; the self-play set of mates
// in 1 and 2 alone (Generate) is `whale data generate --kind mates`.
const BuiltinSeed uint64 = 2026

// BuiltinSizes are smaller than data.DefaultSizes: proving mates costs more
// than writing arithmetic problems, and 2048 training puzzles are plenty.
var BuiltinSizes = data.Sizes{Train: 2048, Val: 256, Audit: 128, Test: 256}

// ManifestFile is the name of the manifest beside the split files.
const ManifestFile = "manifest.json"

// Manifest records how a set of split files was made and each file's
// sha256, so that a hand-edited or truncated split is caught on load.
type Manifest struct {
	Domain    string `json:"domain"`
	Generator string `json:"generator,omitempty"`
	// Seed is the generator's seed when every task carries the same one.
	Seed  *uint64     `json:"seed,omitempty"`
	Sizes data.Sizes  `json:"sizes"`
	Files []SplitFile `json:"files"`
}

// SplitFile is one split file of a Manifest.
type SplitFile struct {
	Split  string `json:"split"`
	File   string `json:"file"`
	Tasks  int    `json:"tasks"`
	SHA256 string `json:"sha256"`
}

// encodeSplit renders a split as data.WriteTasks does: JSON lines with
// sorted Hidden keys, so the bytes depend only on the tasks.
func encodeSplit(tasks []data.Task) ([]byte, error) {
	var b bytes.Buffer
	if err := data.WriteTasks(&b, tasks); err != nil {
		return nil, fmt.Errorf("chess: %w", err)
	}
	return b.Bytes(), nil
}

// WriteSplits writes each split to dir/<split>.jsonl and a manifest with
// every file's sha256 to dir/manifest.json, creating dir if needed.
// Nothing is written unless every split encodes.
func WriteSplits(dir string, splits map[string][]data.Task) error {
	for name := range splits {
		if !isSplit(name) {
			return fmt.Errorf("chess: write splits: unknown split %q (want one of %v)", name, data.Splits)
		}
	}
	m := Manifest{Domain: Name}
	files := map[string][]byte{}
	var seed *uint64
	seedKnown, gen := true, ""
	for _, name := range data.Splits {
		tasks := splits[name]
		b, err := encodeSplit(tasks)
		if err != nil {
			return err
		}
		file := name + ".jsonl"
		files[file] = b
		sum := sha256.Sum256(b)
		m.Files = append(m.Files, SplitFile{Split: name, File: file, Tasks: len(tasks), SHA256: hex.EncodeToString(sum[:])})
		switch name {
		case data.SplitTrain:
			m.Sizes.Train = len(tasks)
		case data.SplitVal:
			m.Sizes.Val = len(tasks)
		case data.SplitAudit:
			m.Sizes.Audit = len(tasks)
		case data.SplitTest:
			m.Sizes.Test = len(tasks)
		}
		for _, t := range tasks {
			s, err := strconv.ParseUint(t.Hidden[HiddenSeed], 10, 64)
			if err != nil || (seed != nil && *seed != s) {
				seedKnown = false
				continue
			}
			seed = &s
			gen = t.Hidden[HiddenSource]
		}
	}
	if seedKnown && seed != nil {
		m.Seed = seed
		m.Generator = gen
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("chess: encode manifest: %w", err)
	}
	files[ManifestFile] = append(mb, '\n')
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("chess: write splits: %w", err)
	}
	// The manifest goes last, so an interrupted write leaves files that
	// fail the hash check rather than a manifest vouching for missing ones.
	for _, sf := range m.Files {
		if err := os.WriteFile(filepath.Join(dir, sf.File), files[sf.File], 0o644); err != nil {
			return fmt.Errorf("chess: write splits: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), files[ManifestFile], 0o644); err != nil {
		return fmt.Errorf("chess: write splits: %w", err)
	}
	return nil
}

func isSplit(name string) bool {
	for _, s := range data.Splits {
		if s == name {
			return true
		}
	}
	return false
}

// ReadSplits reads split files written by WriteSplits, checks each against
// the manifest's sha256 and every task's puzzle, and returns the splits.
func ReadSplits(dir string) (map[string][]data.Task, Manifest, error) {
	return readSplits(os.DirFS(dir), ".", dir)
}

// readSplits reads the manifest and splits from dir in fsys; shown is the
// directory's name in errors.
func readSplits(fsys fs.FS, dir, shown string) (map[string][]data.Task, Manifest, error) {
	var m Manifest
	mpath := path.Join(dir, ManifestFile)
	mshown := filepath.Join(shown, ManifestFile)
	mb, err := fs.ReadFile(fsys, mpath)
	if err != nil {
		return nil, m, fmt.Errorf("chess: read manifest: %w", err)
	}
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, m, fmt.Errorf("chess: %s: %w", mshown, err)
	}
	if m.Domain != Name {
		return nil, m, fmt.Errorf("chess: %s: field domain: want %q, got %q", mshown, Name, m.Domain)
	}
	splits := map[string][]data.Task{}
	for i, f := range m.Files {
		if !isSplit(f.Split) || f.File != path.Base(f.File) {
			return nil, m, fmt.Errorf("chess: %s: files[%d]: want a split name and a plain file name, got %q and %q", mshown, i, f.Split, f.File)
		}
		fshown := filepath.Join(shown, f.File)
		b, err := fs.ReadFile(fsys, path.Join(dir, f.File))
		if err != nil {
			return nil, m, fmt.Errorf("chess: read split %s: %w", f.Split, err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
			return nil, m, fmt.Errorf("chess: %s: sha256 %s, manifest %s records %s", fshown, got, mshown, f.SHA256)
		}
		tasks, err := decodeSplit(b, fshown)
		if err != nil {
			return nil, m, err
		}
		if len(tasks) != f.Tasks {
			return nil, m, fmt.Errorf("chess: %s: %d tasks, manifest %s records %d", fshown, len(tasks), mshown, f.Tasks)
		}
		splits[f.Split] = tasks
	}
	for _, name := range data.Splits {
		if _, ok := splits[name]; !ok {
			return nil, m, fmt.Errorf("chess: %s: no file for split %s", mshown, name)
		}
	}
	return splits, m, nil
}

// decodeSplit parses JSON lines of tasks and checks each one's puzzle.
func decodeSplit(b []byte, shown string) ([]data.Task, error) {
	var tasks []data.Task
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var t data.Task
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			return nil, data.BadLine{File: shown, Line: line, Reason: err.Error()}
		}
		if err := ValidateTask(t); err != nil {
			return nil, data.BadLine{File: shown, Line: line, Field: "hidden", Reason: err.Error()}
		}
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("chess: read %s: %w", shown, err)
	}
	return tasks, nil
}

//go:embed splits
var builtinFS embed.FS

var loadBuiltin = sync.OnceValues(func() (*Domain, error) {
	splits, m, err := readSplits(builtinFS, "splits", "data/chess/splits")
	if err != nil {
		return nil, fmt.Errorf("chess: built-in splits: %w", err)
	}
	if m.Seed == nil || *m.Seed != BuiltinSeed || m.Sizes != BuiltinSizes {
		return nil, errors.New("chess: built-in splits: manifest seed or sizes differ from BuiltinSeed and BuiltinSizes; regenerate them")
	}
	return newDomain(splits)
})

// Builtin returns the committed puzzle splits (BuiltinSizes, generated with
// BuiltinSeed), hash-checked against their manifest. Loading parses and
// checks every puzzle once; later calls share the result.
func Builtin() (data.Domain, error) {
	d, err := loadBuiltin()
	if err != nil {
		return nil, err
	}
	return d, nil
}

// NewDomain makes a Domain from splits (for example those of Generate or
// ReadSplits), checking every task's puzzle.
func NewDomain(splits map[string][]data.Task) (data.Domain, error) {
	d, err := newDomain(splits)
	if err != nil {
		return nil, err
	}
	return d, nil
}
