package domains

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"whale/data"
	"whale/data/chess"
	"whale/data/math"
	"whale/data/searchqa"
)

// ManifestFile is the name of the manifest Generate writes beside the split
// files. Its layout is the chess package's, plus the corpus for searchqa.
const ManifestFile = chess.ManifestFile

// CorpusFile is where Generate writes the searchqa corpus.
const CorpusFile = "corpus.jsonl"

// Manifest records how a directory of splits was made and each file's
// sha256, so that an edited or truncated file is caught on load.
type Manifest struct {
	Domain string            `json:"domain"`
	Seed   *uint64           `json:"seed,omitempty"`
	Sizes  data.Sizes        `json:"sizes"`
	Files  []chess.SplitFile `json:"files"`
	// Corpus is the searchqa corpus file (Tasks counts its documents).
	Corpus *chess.SplitFile `json:"corpus,omitempty"`
}

// DefaultSizes are the split sizes Generate uses for a domain.
func DefaultSizes(name string) data.Sizes {
	if name == chess.Name {
		return chess.BuiltinSizes
	}
	return data.DefaultSizes
}

// Generate makes a domain's splits from seed with DefaultSizes and writes
// them to dir (created if needed) as <split>.jsonl, one data.Task a line,
// plus manifest.json and, for searchqa, corpus.jsonl. Everything is
// generated and encoded before the first file is written. progress, if not
// nil, hears about slow generation (chess). It returns the manifest.
func Generate(name string, seed uint64, dir string, progress func(done, total int)) (Manifest, error) {
	if name == chess.Name {
		splits, err := chess.GenerateLadder(seed, chess.BuiltinSizes, progress)
		if err != nil {
			return Manifest{}, err
		}
		if err := chess.WriteSplits(dir, splits); err != nil {
			return Manifest{}, err
		}
		b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
		if err != nil {
			return Manifest{}, fmt.Errorf("domains: read back %s: %w", ManifestFile, err)
		}
		var m Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			return Manifest{}, fmt.Errorf("domains: read back %s: %w", ManifestFile, err)
		}
		return m, nil
	}
	d, err := Open(name, seed)
	if err != nil {
		return Manifest{}, err
	}
	files := map[string][]byte{}
	m := Manifest{Domain: name, Seed: &seed}
	for _, sp := range data.Splits {
		tasks, err := d.Tasks(sp)
		if err != nil {
			return Manifest{}, err
		}
		var b bytes.Buffer
		if err := data.WriteTasks(&b, tasks); err != nil {
			return Manifest{}, err
		}
		file := sp + ".jsonl"
		files[file] = b.Bytes()
		m.Files = append(m.Files, chess.SplitFile{Split: sp, File: file, Tasks: len(tasks), SHA256: sha(b.Bytes())})
		setSize(&m.Sizes, sp, len(tasks))
	}
	if sq, ok := d.(*searchqa.Domain); ok {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		docs := sq.Corpus()
		for _, doc := range docs {
			if err := enc.Encode(doc); err != nil {
				return Manifest{}, fmt.Errorf("domains: encode corpus: %w", err)
			}
		}
		files[CorpusFile] = b.Bytes()
		m.Corpus = &chess.SplitFile{File: CorpusFile, Tasks: len(docs), SHA256: sha(b.Bytes())}
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("domains: encode manifest: %w", err)
	}
	files[ManifestFile] = append(mb, '\n')
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Manifest{}, fmt.Errorf("domains: generate %s: %w", name, err)
	}
	for _, f := range sortedKeys(files) {
		if err := os.WriteFile(filepath.Join(dir, f), files[f], 0o644); err != nil {
			return Manifest{}, fmt.Errorf("domains: generate %s: %w", name, err)
		}
	}
	return m, nil
}

func sortedKeys(m map[string][]byte) []string {
	var out []string
	for _, sp := range data.Splits {
		if _, ok := m[sp+".jsonl"]; ok {
			out = append(out, sp+".jsonl")
		}
	}
	for _, f := range []string{CorpusFile, ManifestFile} {
		if _, ok := m[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

func setSize(s *data.Sizes, split string, n int) {
	switch split {
	case data.SplitTrain:
		s.Train = n
	case data.SplitVal:
		s.Val = n
	case data.SplitAudit:
		s.Audit = n
	case data.SplitTest:
		s.Test = n
	}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ReadSplits reads a directory written by Generate, checking every file
// against the manifest's sha256 and every record's fields.
func ReadSplits(dir string) (data.Domain, error) {
	mpath := filepath.Join(dir, ManifestFile)
	mb, err := os.ReadFile(mpath)
	if err != nil {
		return nil, fmt.Errorf("domains: read splits: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("domains: %s: %w", mpath, err)
	}
	switch m.Domain {
	case chess.Name:
		splits, _, err := chess.ReadSplits(dir)
		if err != nil {
			return nil, err
		}
		return chess.NewDomain(splits)
	case math.Name, searchqa.Name:
	default:
		return nil, fmt.Errorf("domains: %s: field domain: unknown domain %q", mpath, m.Domain)
	}
	splits := map[string][]data.Task{}
	for i, f := range m.Files {
		if !isSplit(f.Split) || f.File != filepath.Base(f.File) {
			return nil, fmt.Errorf("domains: %s: files[%d]: want a split name and a plain file name, got %q and %q", mpath, i, f.Split, f.File)
		}
		tasks, err := readTasks(filepath.Join(dir, f.File), f.SHA256, m.Domain)
		if err != nil {
			return nil, err
		}
		if len(tasks) != f.Tasks {
			return nil, fmt.Errorf("domains: %s: %d tasks, manifest records %d", filepath.Join(dir, f.File), len(tasks), f.Tasks)
		}
		splits[f.Split] = tasks
	}
	for _, sp := range data.Splits {
		if _, ok := splits[sp]; !ok {
			return nil, fmt.Errorf("domains: %s: no file for split %s", mpath, sp)
		}
	}
	if m.Domain == math.Name {
		return math.FromTasks(splits), nil
	}
	if m.Corpus == nil || m.Corpus.File != filepath.Base(m.Corpus.File) {
		return nil, fmt.Errorf("domains: %s: field corpus: want the corpus file of a searchqa domain", mpath)
	}
	cpath := filepath.Join(dir, m.Corpus.File)
	if err := checkHash(cpath, m.Corpus.SHA256); err != nil {
		return nil, err
	}
	var docs []searchqa.Doc
	_, err = data.ScanLines(cpath, false, func(line int, text []byte) *data.BadLine {
		var doc searchqa.Doc
		if err := json.Unmarshal(text, &doc); err != nil {
			return &data.BadLine{Reason: "invalid JSON: " + err.Error()}
		}
		docs = append(docs, doc)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("domains: read corpus: %w", err)
	}
	return searchqa.FromCorpus(docs, splits), nil
}

func isSplit(name string) bool {
	for _, s := range data.Splits {
		if s == name {
			return true
		}
	}
	return false
}

func checkHash(path, want string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("domains: %w", err)
	}
	if got := sha(b); got != want {
		return fmt.Errorf("domains: %s: sha256 %s, the manifest records %s", path, got, want)
	}
	return nil
}

// readTasks reads a hash-checked split file of tasks of one domain.
func readTasks(path, wantSHA, domain string) ([]data.Task, error) {
	if err := checkHash(path, wantSHA); err != nil {
		return nil, err
	}
	var tasks []data.Task
	_, err := data.ScanLines(path, false, func(line int, text []byte) *data.BadLine {
		var t data.Task
		if err := json.Unmarshal(text, &t); err != nil {
			return &data.BadLine{Reason: "invalid JSON: " + err.Error()}
		}
		switch {
		case t.ID == "":
			return &data.BadLine{Field: "id", Reason: "missing or empty"}
		case t.Domain != domain:
			return &data.BadLine{Field: "domain", Reason: fmt.Sprintf("want %q, got %q", domain, t.Domain)}
		case t.Problem == "":
			return &data.BadLine{Field: "problem", Reason: "missing or empty"}
		case t.Answer == "":
			return &data.BadLine{Field: "answer", Reason: "missing or empty"}
		}
		tasks = append(tasks, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("domains: read split: %w", err)
	}
	return tasks, nil
}
