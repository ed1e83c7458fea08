package tokenizer

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
)

func TestScannersAgreeWithEncodingJSON(t *testing.T) {
	src, err := os.ReadFile(qwenFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Model struct {
			Vocab  json.RawMessage `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(gunzip(t, src), &f); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ vocab, merges string }{
		{string(f.Model.Vocab), string(f.Model.Merges)},
		{`{ "a\"b" : 1 , "\u00e9\\" :2,"x":-3 }`, `[ "a b" , "\u0120 \u0120", "c\"d e" ]`},
		{`{}`, `[]`},
		{`{"a":0}`, `[["a\\", "\"b"], [ "c" , "d" ]]`},
	}
	for i, c := range cases {
		var wantV map[string]int32
		if err := json.Unmarshal([]byte(c.vocab), &wantV); err != nil {
			t.Fatal(err)
		}
		gotV, err := scanVocab([]byte(c.vocab))
		if err != nil || !maps.Equal(gotV, wantV) {
			t.Errorf("case %d: scanVocab = %d entries, err %v; want %d", i, len(gotV), err, len(wantV))
		}
		var wantM [][2]string
		if err := json.Unmarshal([]byte(c.merges), &wantM); err != nil {
			wantM = nil
			var lines []string
			if err := json.Unmarshal([]byte(c.merges), &lines); err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				p, err := splitMerge(l)
				if err != nil {
					t.Fatal(err)
				}
				wantM = append(wantM, p)
			}
		}
		gotM, err := scanMerges([]byte(c.merges))
		if err != nil || !slices.Equal(gotM, wantM) {
			t.Errorf("case %d: scanMerges = %q, err %v; want %q", i, gotM[:min(3, len(gotM))], err, wantM[:min(3, len(wantM))])
		}
	}
	if _, err := scanMerges([]byte(`["a b c"]`)); err == nil {
		t.Error(`merge "a b c" accepted`)
	}
}
