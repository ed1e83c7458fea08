package store

import (
	"path/filepath"
	"testing"
	"time"
)

// baseParams is the embedded base model's parameter count: a resume point
// stores its weights (4 bytes each) and AdamW moments (8 bytes each).
const baseParams = 4_494_976

// BenchmarkResumePointBlobs is what a resume point costs in blob writes:
// the weights and optimizer state of the base model, written and synced,
// and the previous point's deleted. Weight steps used to pay it every
// step; now they pay BenchmarkHashWeights and a point every 30 s.
func BenchmarkResumePointBlobs(b *testing.B) {
	db, err := Open(filepath.Join(b.TempDir(), "w.db"), time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	w, o := make([]byte, 4*baseParams), make([]byte, 8+8*baseParams)
	var prev []string
	b.SetBytes(int64(len(w) + len(o)))
	for i := 0; i < b.N; i++ {
		w[i%len(w)]++ // new content each point
		o[i%len(o)]++
		hw, err := db.PutBlob(w)
		if err != nil {
			b.Fatal(err)
		}
		ho, err := db.PutBlob(o)
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range prev {
			if err := db.DeleteBlob(h); err != nil {
				b.Fatal(err)
			}
		}
		prev = []string{hw, ho}
	}
}

// BenchmarkHashWeights is what a weight step pays instead: naming the new
// weights by their sha256.
func BenchmarkHashWeights(b *testing.B) {
	w := make([]byte, 4*baseParams)
	b.SetBytes(int64(len(w)))
	for i := 0; i < b.N; i++ {
		Hash(w)
	}
}
