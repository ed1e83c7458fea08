package bundle

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The transformers fixture (testdata/transformers): the four random-weight
// models of testConfigs exported by whale in float32, each with whale's
// logits on testIDs. testdata/transformers_parity.py loads every folder
// with Hugging Face transformers itself (AutoModelForCausalLM, eager
// attention) and compares its logits with whale's; it runs where
// transformers is installed (the GPU machine's device check,
// kernels/cuda/device-check.sh), since this machine has none. Regenerate
// with WHALE_WRITE_FIXTURES=1 go test ./core/bundle -run TestTransformersFixture.
const transformersFixture = "testdata/transformers"

// fixtureLogits is a folder's whale_logits.json.
type fixtureLogits struct {
	IDs    []int32     `json:"ids"`
	Logits [][]float32 `json:"logits"` // row t predicts token t+1
}

// TestTransformersFixtureIsWhales: the committed folders are byte for byte
// what whale's export writes today, and their logits what whale computes
// (within 1e-5: a CPU with other vector widths sums in another order), so
// the transformers comparison on another machine tests this code.
func TestTransformersFixtureIsWhales(t *testing.T) {
	write := os.Getenv("WHALE_WRITE_FIXTURES") == "1"
	for _, m := range exportTestModels(t) {
		name, dir, ids, V := m.name, m.dir, m.ids, m.cfg.VocabSize
		got := fixtureLogits{IDs: ids}
		for i := range ids {
			got.Logits = append(got.Logits, m.logits[i*V:(i+1)*V])
		}
		want := filepath.Join(transformersFixture, name)
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if write {
			if err := os.RemoveAll(want); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(want, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range files {
			made, err := os.ReadFile(filepath.Join(dir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if write {
				if err := os.WriteFile(filepath.Join(want, f.Name()), made, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			kept, err := os.ReadFile(filepath.Join(want, f.Name()))
			if err != nil {
				t.Fatalf("%s: %v (regenerate: WHALE_WRITE_FIXTURES=1 go test ./core/bundle -run TestTransformersFixture)", name, err)
			}
			if !bytes.Equal(made, kept) {
				t.Fatalf("%s/%s differs from what whale exports now (regenerate: WHALE_WRITE_FIXTURES=1 go test ./core/bundle -run TestTransformersFixture)", name, f.Name())
			}
		}
		path := filepath.Join(want, "whale_logits.json")
		if write {
			js, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(js, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		js, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var kept fixtureLogits
		if err := json.Unmarshal(js, &kept); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !slices.Equal(kept.IDs, ids) || len(kept.Logits) != len(ids) {
			t.Fatalf("%s: ids %v and %d rows, want %v", path, kept.IDs, len(kept.Logits), ids)
		}
		for i, row := range kept.Logits {
			for j, v := range row {
				if d := absf(float64(v - got.Logits[i][j])); d > 1e-5 {
					t.Fatalf("%s: position %d token %d: committed %v, whale now %v", path, i, j, v, got.Logits[i][j])
				}
			}
		}
	}
	if write {
		t.Log("wrote", transformersFixture)
	}
}
