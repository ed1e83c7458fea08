package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkVerifyPages measures the page verifier that every open runs,
// on the workspace named by WHALE_VERIFY_DB; where that names no file (or
// none is named) it first writes one there (or in a temporary folder) of
// WHALE_VERIFY_MB megabytes (default 64) of samples and events, as long
// runs leave them:
//
//	WHALE_VERIFY_MB=512 go test ./core/store -run '^$' -bench VerifyPages -benchtime 5x
func BenchmarkVerifyPages(b *testing.B) {
	path := os.Getenv("WHALE_VERIFY_DB")
	if _, err := os.Stat(path); path == "" || err != nil {
		mb := 64
		if v, err := strconv.Atoi(os.Getenv("WHALE_VERIFY_MB")); err == nil && v > 0 {
			mb = v
		}
		if path == "" {
			path = filepath.Join(b.TempDir(), "big.db")
		}
		db, err := Open(path, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		db.bolt.NoSync = true
		rec := []byte(`{"kind":"w","trajectory":{"text":"` + strings.Repeat("z", 1800) + `"}}`)
		for r := 0; r*32 < mb; r++ {
			id := fmt.Sprintf("run-%d", r)
			if err := db.CreateRun(id, []byte(`{}`), time.Unix(0, 0)); err != nil {
				b.Fatal(err)
			}
			for range 32 { // 32 MB a run, 1000 records a transaction
				recs := make([][]byte, 0, 512)
				for range 512 {
					recs = append(recs, rec)
				}
				if _, err := db.AppendSamples(id, recs...); err != nil {
					b.Fatal(err)
				}
				if _, err := db.AppendEvents(id, recs[:16]...); err != nil {
					b.Fatal(err)
				}
			}
		}
		db.Close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		probs, err := verifyPages(path, true)
		if err != nil || len(probs) > 0 {
			b.Fatalf("%v %v", err, probs)
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MB")
}
