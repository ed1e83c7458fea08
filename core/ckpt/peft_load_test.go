package ckpt

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"whale/core/model"
	"whale/internal/longtests"
	"whale/kernels"
)

func loraModel(t *testing.T, cfg model.Config, lc model.LoRAConfig, seed uint64) *model.Model {
	t.Helper()
	m, err := model.New(cfg, kernels.NewCPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.EnableLoRA(lc, seed); err != nil {
		t.Fatal(err)
	}
	return m
}

var tinyLoRA = model.Config{ModelType: "qwen3", VocabSize: 64, HiddenSize: 16, IntermediateSize: 32, NumHiddenLayers: 2,
	NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 64, TieWordEmbeddings: true}

// Adapters saved as PEFT load back bit for bit into a model of the same
// adapters; a folder of another rank, alpha or targets is refused,
// naming the file and the field.
func TestAdaptersSavedAsPEFTLoadBackExactly(t *testing.T) {
	lc := model.LoRAConfig{Rank: 2, Alpha: 4, Targets: model.LoRATargets}
	src := loraModel(t, tinyLoRA, lc, 3)
	vals := src.TrainableValues()
	for i := range vals {
		vals[i] += float32(i%7) * 0.01 // B is zero at first: give it values
	}
	if err := src.SetTrainableValues(vals); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := SaveAdapters(dir, src, F32, "base", nil); err != nil {
		t.Fatal(err)
	}
	dst := loraModel(t, tinyLoRA, lc, 9)
	if err := LoadAdapters(dir, dst); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dst.TrainableValues(), vals) {
		t.Fatal("the loaded adapters differ from the saved ones")
	}
	for _, c := range []struct {
		lc   model.LoRAConfig
		want string
	}{
		{model.LoRAConfig{Rank: 4, Alpha: 4, Targets: model.LoRATargets}, "r 2"},
		{model.LoRAConfig{Rank: 2, Alpha: 8, Targets: model.LoRATargets}, "lora_alpha 4"},
		{model.LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"q", "v"}}, "target_modules"},
	} {
		err := LoadAdapters(dir, loraModel(t, tinyLoRA, c.lc, 1))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), PEFTConfig) {
			t.Errorf("%+v: %v, want an error naming %s and %q", c.lc, err, PEFTConfig, c.want)
		}
	}
	plain, _ := model.New(tinyLoRA, kernels.NewCPU(), 1)
	if err := LoadAdapters(dir, plain); err == nil {
		t.Error("a model without adapters accepted a PEFT folder")
	}
}

// What a fleet's weight step writes and each replica reads: the adapters
// of a Qwen3-0.6B shape at rank 16 on every projection (10.1 M values,
// 40 MB). Long: it builds the 0.6B model.
func TestAdapterExportOfAQwen3Shape(t *testing.T) {
	longtests.Skip(t, "builds a 0.6B model")
	cfg, err := model.Preset("qwen3-0.6b")
	if err != nil {
		t.Fatal(err)
	}
	m := loraModel(t, cfg, model.LoRAConfig{Rank: 16, Alpha: 32, Targets: model.LoRATargets}, 1)
	n := len(m.TrainableValues())
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for rep := range 3 {
		t0 := time.Now()
		if _, err := SaveAdapters(dir, m, F32, "Qwen/Qwen3-0.6B", nil); err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if err := LoadAdapters(dir, m); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(dir, PEFTWeights))
		if err != nil || fi.Size() < int64(4*n) {
			t.Fatalf("%s: %v, %d bytes for %d values", PEFTWeights, err, fi.Size(), n)
		}
		t.Logf("rep %d: %d adapter values, %d bytes: export %v, read back %v", rep, n, fi.Size(), t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	}
}
