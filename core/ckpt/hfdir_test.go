package ckpt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"whale/kernels"
)

// writeShards writes m's tensors into dir as a Hugging Face sharded
// folder: config.json, two shards (tensor i into shard i%2, as BF16) and an
// index mapping every tensor to its shard; edit may change the shards'
// tensors and the weight map before they are written.
func writeShards(t *testing.T, dir string, edit func(shards [2][]Tensor, wm map[string]string) [2][]Tensor) {
	t.Helper()
	m := tinyModel(t, 4)
	cj, err := HFConfigJSON(m.Config, BF16)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, HFConfig), cj, 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := Tensors(m, BF16)
	if err != nil {
		t.Fatal(err)
	}
	names := [2]string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	var shards [2][]Tensor
	wm := map[string]string{}
	for i, x := range ts {
		shards[i%2] = append(shards[i%2], x)
		wm[x.Name] = names[i%2]
	}
	if edit != nil {
		shards = edit(shards, wm)
	}
	for i, s := range shards {
		if err := WriteFile(filepath.Join(dir, names[i]), s, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
	}
	ij, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": wm})
	if err := os.WriteFile(filepath.Join(dir, HFIndex), ij, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadDirReadsShardedBF16(t *testing.T) {
	dir := t.TempDir()
	writeShards(t, dir, nil)
	got, meta, files, err := LoadDir(dir, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if meta != nil {
		t.Errorf("a sharded folder has no one file's metadata, got %v", meta)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	want := []string{HFConfig, HFIndex, "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	if !slices.Equal(names, want) {
		t.Fatalf("files read %v, want %v", names, want)
	}
	m := tinyModel(t, 4)
	if got.Config != m.Config {
		t.Fatalf("config %+v, want %+v", got.Config, m.Config)
	}
	w, h := m.ParamValues(), got.ParamValues()
	for i := range w {
		if exact := bf16ToF32(bf16FromF32(w[i])); h[i] != exact {
			t.Fatalf("parameter %d = %g, want %g (bf16 widened to float32 exactly)", i, h[i], exact)
		}
	}
}

func TestLoadDirRefusesBadShards(t *testing.T) {
	const s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	for _, tc := range []struct {
		name string
		edit func(sh [2][]Tensor, wm map[string]string) [2][]Tensor
		want []string
	}{
		{"tensor in both shards", func(sh [2][]Tensor, wm map[string]string) [2][]Tensor {
			sh[1] = append(sh[1], sh[0][0])
			return sh
		}, []string{"model.embed_tokens.weight", s1, s2, "both"}},
		{"tensor in the wrong shard", func(sh [2][]Tensor, wm map[string]string) [2][]Tensor {
			wm[sh[0][1].Name] = s2
			return sh
		}, []string{s1, "maps it to " + s2}},
		{"tensor missing", func(sh [2][]Tensor, wm map[string]string) [2][]Tensor {
			delete(wm, sh[1][0].Name)
			sh[1] = sh[1][1:]
			return sh
		}, []string{"tensor not found"}},
		{"index names a tensor no shard holds", func(sh [2][]Tensor, wm map[string]string) [2][]Tensor {
			wm["model.extra.weight"] = s1
			return sh
		}, []string{HFIndex, "model.extra.weight", "does not hold it"}},
		{"wrong shape", func(sh [2][]Tensor, wm map[string]string) [2][]Tensor {
			for i := range sh[1] {
				if x := &sh[1][i]; len(x.Shape) == 2 {
					x.Shape = []int{len(x.Data)} // the same values, flattened
					break
				}
			}
			return sh
		}, []string{s2, "has shape"}},
		{"tensor not in the index", func(sh [2][]Tensor, wm map[string]string) [2][]Tensor {
			sh[0] = append(sh[0], Tensor{Name: "model.stray", Shape: []int{1}, DType: BF16, Data: []float32{1}})
			return sh
		}, []string{s1, "model.stray", "weight_map"}},
	} {
		dir := t.TempDir()
		writeShards(t, dir, tc.edit)
		_, _, _, err := LoadDir(dir, kernels.NewCPU())
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, w)
			}
		}
	}
	if _, _, _, err := LoadDir(t.TempDir(), kernels.NewCPU()); err == nil || !strings.Contains(err.Error(), HFConfig) {
		t.Errorf("empty folder: error %v, want one naming %s", err, HFConfig)
	}
}
