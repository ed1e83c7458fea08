package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchCorpora are the texts BenchmarkQwenEncode measures: the golden
// strings (many scripts, emoji, special tokens) and this package's Go source
// (English and code).
func benchCorpora(b *testing.B) map[string]string {
	var gold strings.Builder
	for _, g := range readGolden(b) {
		gold.WriteString(g.Text)
		gold.WriteByte('\n')
	}
	files, _ := filepath.Glob("*.go")
	var src strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		src.Write(data)
	}
	return map[string]string{"golden": gold.String(), "gosource": src.String()}
}

// BenchmarkQwenEncode reports encoding speed in MB/s of input. "warm" keeps
// the word cache across passes, as a long-lived tokenizer does; "cold"
// empties it before every pass.
//
//	go test ./core/tokenizer/ -run '^$' -bench QwenEncode -benchtime 3s
func BenchmarkQwenEncode(b *testing.B) {
	tok := qwen(b)
	for _, name := range []string{"golden", "gosource"} {
		text := benchCorpora(b)[name]
		b.Run(name+"/warm", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tok.EncodeSpecial(text)
			}
		})
		b.Run(name+"/cold", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tok.cache.mu.Lock()
				tok.cache.m = nil
				tok.cache.mu.Unlock()
				tok.EncodeSpecial(text)
			}
		})
	}
}

// BenchmarkQwenSplit compares the hand-written pre-tokenizer with the
// regexp2 one it replaces for Qwen's pattern.
func BenchmarkQwenSplit(b *testing.B) {
	text := benchCorpora(b)["golden"]
	re, err := newRegexSplitter(qwenPattern)
	if err != nil {
		b.Fatal(err)
	}
	var ends []int
	for _, s := range []struct {
		name string
		sp   splitter
	}{{"scanner", newQwenSplitter()}, {"regexp2", re}} {
		b.Run(s.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				ends = s.sp.split(text, ends[:0])
			}
		})
	}
}

func BenchmarkLoadQwen(b *testing.B) {
	for b.Loop() {
		if _, err := Load(qwenFile); err != nil {
			b.Fatal(err)
		}
	}
}
