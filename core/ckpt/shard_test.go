package ckpt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"whale/kernels"
)

// TestSaveWeightsShardsAndLoadsBack: weights above the shard size go into
// shards of at most that size in parameter order, with an index whose
// total_size is the tensors' bytes; the folder loads back bit for bit;
// a later export in the other layout removes this one's entry file.
func TestSaveWeightsShardsAndLoadsBack(t *testing.T) {
	m := tinyModel(t, 4)
	dir := t.TempDir()
	cj, _ := HFConfigJSON(m.Config, F32)
	if err := os.WriteFile(filepath.Join(dir, HFConfig), cj, 0o644); err != nil {
		t.Fatal(err)
	}
	var total, largest int64
	for _, p := range m.Params() {
		n := int64(4 * p.Len)
		total += n
		largest = max(largest, n)
	}
	limit := max(largest, total/5)
	files, err := SaveWeights(dir, m, F32, nil, limit)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 || filepath.Base(files[len(files)-1]) != HFIndex {
		t.Fatalf("files %v: want several shards and the index last", files)
	}
	var idx struct {
		Metadata struct {
			TotalSize int64 `json:"total_size"`
		} `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	b, _ := os.ReadFile(files[len(files)-1])
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Metadata.TotalSize != total || len(idx.WeightMap) != len(m.Params()) {
		t.Fatalf("index total_size %d for %d bytes, %d of %d tensors mapped", idx.Metadata.TotalSize, total, len(idx.WeightMap), len(m.Params()))
	}
	for i, f := range files[:len(files)-1] {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var data int64
		for _, n := range r.Names() {
			_, shape, _ := r.Info(n)
			data += int64(4 * numel(shape))
		}
		if data > limit || st.Size() <= data {
			t.Fatalf("shard %d: %d bytes of tensors over the limit %d (file %d bytes)", i, data, limit, st.Size())
		}
	}
	got, _, _, err := LoadDir(dir, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.ParamValues(), m.ParamValues()) {
		t.Fatal("the sharded folder loads back different weights")
	}
	if _, err := SaveWeights(dir, m, F32, nil, DefaultShardBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, HFIndex)); !os.IsNotExist(err) {
		t.Fatalf("the earlier export's index is still there (%v)", err)
	}
	if _, err := SaveWeights(dir, m, F32, nil, limit); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, HFWeights)); !os.IsNotExist(err) {
		t.Fatalf("the earlier export's model.safetensors is still there (%v)", err)
	}
	if _, err := SaveWeights(dir, m, F32, nil, 0); err == nil {
		t.Fatal("a zero shard size was accepted")
	}
}
