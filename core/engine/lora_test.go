package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/store"
	"whale/internal/longtests"
	"whale/kernels"
)

func loraConfig(t *testing.T) Config {
	cfg := tinyConfig(t)
	cfg.LoRA = &model.LoRAConfig{Rank: 2, Alpha: 4, Targets: model.LoRATargets}
	cfg.KL = 1 // the reference shares the frozen weights
	cfg.LR = 1e-2
	return cfg
}

// TestLoRARunTrainsAdaptersAndResumesExactly: a LoRA run stores the
// starting weights once as its frozen base and, at every resume point and
// checkpoint, the adapters alone; the weights never move; a run stopped
// mid-way and resumed in a new process ends byte for byte as the
// uninterrupted one.
func TestLoRARunTrainsAdaptersAndResumesExactly(t *testing.T) {
	cfg := loraConfig(t)
	db := openDB(t)
	env := testEnv(t, db)
	start := env.Bundle.Model.ParamValues()
	e, err := New(cfg, env, "lora")
	if err != nil {
		t.Fatal(err)
	}
	fresh := e.State().Weights
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e.Cfg.Base != store.Hash(f32bytes(start)) {
		t.Fatalf("base blob %s is not the starting weights", ShortHash(e.Cfg.Base))
	}
	if _, err := db.GetBlob(e.Cfg.Base); err != nil {
		t.Fatalf("base blob: %v", err)
	}
	if !slices.Equal(start, env.Bundle.Model.ParamValues()) {
		t.Fatal("a LoRA run moved the frozen weights")
	}
	if sum.FinalWeights == fresh {
		t.Fatal("the adapters did not train")
	}
	blob, err := db.GetBlob(sum.FinalWeights)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(env.Bundle.Model.TrainableValues()); len(blob) != 4*n || n >= len(start) {
		t.Fatalf("weights blob of %d bytes, adapters %d values, model %d", len(blob), n, len(start))
	}
	man, err := ReadCheckpoint(db, sum.BestCkpt)
	if err != nil {
		t.Fatal(err)
	}
	if man.LoRA == nil || man.Base != e.Cfg.Base {
		t.Fatalf("checkpoint manifest LoRA %v base %s", man.LoRA, man.Base)
	}
	if c, _ := db.GetCheckpoint(sum.BestCkpt); !slices.Contains(c.Blobs, man.Base) {
		t.Fatalf("checkpoint blobs %v do not pin the frozen weights", c.Blobs)
	}

	dbB := openDB(t)
	b, err := New(cfg, testEnv(t, dbB), "lora")
	if err != nil {
		t.Fatal(err)
	}
	saves := 0
	b.stopAfter = func(State) bool { saves++; return saves == 7 }
	if _, err := b.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("stop: %v", err)
	}
	envC := testEnv(t, dbB)
	envC.Bundle = nil // rebuilt: the base blob, then the adapters
	resumeMatches(t, envC, "lora", sum, "LoRA run stopped at its 7th save")
}

// TestLoRACheckpointExportsMergedAndForks: export folds the adapters
// into the weights (the exported model's logits are the adapted model's),
// and a fork of a LoRA checkpoint starts from its adapters over the same
// frozen weights.
func TestLoRACheckpointExportsMergedAndForks(t *testing.T) {
	cfg := loraConfig(t)
	cfg.MaxRounds = 1
	db := openDB(t)
	env := testEnv(t, db)
	e, err := New(cfg, env, "a")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	man, _ := ReadCheckpoint(db, sum.BestCkpt)
	adapted, err := model.New(testModel, kernels.NewCPU(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpointWeights(db, adapted, man); err != nil {
		t.Fatal(err)
	}
	ids := []int32{3, 70, 101, 9, 44, 200, 17}
	want, _ := adapted.Logits(ids)
	files, err := ExportCheckpoint(db, sum.BestCkpt, filepath.Join(t.TempDir(), "out"), "F32", ExportWhale, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := ckpt.LoadModel(files[0], kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if m.LoRA() != nil {
		t.Fatal("the export kept adapters")
	}
	got, _ := m.Logits(ids)
	plain, _ := model.New(testModel, kernels.NewCPU(), 0)
	base, _ := db.GetBlob(man.Base)
	_ = plain.SetParamValues(bytesf32(base))
	frozen, _ := plain.Logits(ids)
	var worst, moved float32
	for i := range want {
		worst = max(worst, abs32(got[i]-want[i]))
		moved = max(moved, abs32(frozen[i]-want[i]))
	}
	// float32 rounding of the merged weights on logits of order 1.
	if worst > 1e-5 {
		t.Fatalf("exported logits differ from the adapted model's by %g", worst)
	}
	if moved == 0 {
		t.Fatal("the adapters do not change the logits: the test would not see an export that drops them")
	}

	fenv := testEnv(t, db)
	fenv.Bundle = nil
	f, err := Fork(fenv, kernels.NewCPU(), sum.BestCkpt, "b")
	if err != nil {
		t.Fatal(err)
	}
	if f.State().Weights != man.Weights || f.Cfg.Base != man.Base || f.model.LoRA() == nil {
		t.Fatalf("fork starts from %s over base %s (LoRA %v); the checkpoint holds %s over %s", ShortHash(f.State().Weights), ShortHash(f.Cfg.Base), f.model.LoRA(), ShortHash(man.Weights), ShortHash(man.Base))
	}
	if _, err := f.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLoRAConfigRefusals(t *testing.T) {
	cfg := loraConfig(t)
	cfg.LoRA.Rank = 100
	db := openDB(t)
	if _, err := New(cfg, testEnv(t, db), "r"); err == nil || !strings.Contains(err.Error(), "lora") || !strings.Contains(err.Error(), "rank 100") {
		t.Fatalf("rank above the model's sides: %v", err)
	}
	cfg = loraConfig(t)
	cfg.Condition = "harness-only"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "lora") {
		t.Fatalf("LoRA on harness-only: %v", err)
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestLoRACheckpointExportsPEFTAdapters: --format peft writes the
// adapters under PEFT's names with the rank, alpha and modules in
// adapter_config.json; folding the file's adapters into the frozen
// weights as PEFT does (W + alpha/r·B·A) gives the merged export's
// weights. A checkpoint of full weights refuses the format.
func TestLoRACheckpointExportsPEFTAdapters(t *testing.T) {
	cfg := loraConfig(t)
	cfg.MaxRounds = 1
	cfg.LoRA.Targets = []string{"q", "down"}
	db := openDB(t)
	e, err := New(cfg, testEnv(t, db), "a")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "peft")
	if _, err := ExportCheckpoint(db, sum.BestCkpt, dir, "F32", ExportPEFT, 0); err != nil {
		t.Fatal(err)
	}
	var pc struct {
		PeftType string   `json:"peft_type"`
		R        int      `json:"r"`
		Alpha    float64  `json:"lora_alpha"`
		Modules  []string `json:"target_modules"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ckpt.PEFTConfig))
	if err != nil || json.Unmarshal(b, &pc) != nil {
		t.Fatalf("adapter_config.json: %v %s", err, b)
	}
	if pc.PeftType != "LORA" || pc.R != 2 || pc.Alpha != 4 || !slices.Equal(pc.Modules, []string{"q_proj", "down_proj"}) {
		t.Fatalf("adapter config %+v", pc)
	}
	ad, err := ckpt.ReadFile(filepath.Join(dir, ckpt.PEFTWeights))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ad.Names()); n != 2*2*testModel.NumHiddenLayers {
		t.Fatalf("%d adapter tensors: %v", n, ad.Names())
	}
	files, err := ExportCheckpoint(db, sum.BestCkpt, filepath.Join(t.TempDir(), "merged"), "F32", ExportWhale, 0)
	if err != nil {
		t.Fatal(err)
	}
	merged, _, err := ckpt.LoadModel(files[0], kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	man, _ := ReadCheckpoint(db, sum.BestCkpt)
	frozen, _ := model.New(testModel, kernels.NewCPU(), 0)
	base, _ := db.GetBlob(man.Base)
	_ = frozen.SetParamValues(bytesf32(base))
	moved := false
	for l := 0; l < testModel.NumHiddenLayers; l++ {
		for _, mod := range []string{"self_attn.q_proj", "mlp.down_proj"} {
			p := fmt.Sprintf("base_model.model.model.layers.%d.%s.", l, mod)
			_, as, _ := ad.Info(p + "lora_A.weight")
			_, bs, _ := ad.Info(p + "lora_B.weight")
			A, err := ad.Float32(p+"lora_A.weight", as)
			if err != nil {
				t.Fatal(err)
			}
			B, err := ad.Float32(p+"lora_B.weight", bs)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("model.layers.%d.%s.weight", l, mod)
			w0, _ := frozen.ReadParam(name)
			w1, _ := merged.ReadParam(name)
			r, in := as[0], as[1]
			for o := 0; o < bs[0]; o++ {
				for j := 0; j < in; j++ {
					var acc float64
					for k := 0; k < r; k++ {
						acc += float64(B[o*r+k]) * float64(A[k*in+j])
					}
					want := float64(w0[o*in+j]) + pc.Alpha/float64(pc.R)*acc
					if d := math.Abs(want - float64(w1[o*in+j])); d > 1e-6*max(1, math.Abs(want)) {
						t.Fatalf("%s [%d,%d]: merged %v, base + PEFT adapters %v", name, o, j, w1[o*in+j], want)
					}
					moved = moved || w1[o*in+j] != w0[o*in+j]
				}
			}
		}
	}
	if !moved {
		t.Fatal("the adapters change no weight: the test would not see a wrong file")
	}
	// Full weights have no adapters to export.
	plain := tinyConfig(t)
	plain.MaxRounds = 1
	f, err := New(plain, testEnv(t, db), "full")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := f.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(t.TempDir(), "none")
	if _, err := ExportCheckpoint(db, fs.BestCkpt, none, "F32", ExportPEFT, 0); err == nil || !strings.Contains(err.Error(), "not LoRA adapters") {
		t.Fatalf("peft export of full weights: %v", err)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Fatalf("a refused export made its folder (%v)", err)
	}
}

// TestLoRARunOverABF16BaseResumesExactly: with the frozen weights held
// in bfloat16, the base blob keeps the starting weights as they came, the
// model holds them rounded, and a run stopped mid-way and resumed in a
// new process (rounding the base blob again) ends byte for byte as the
// uninterrupted one.
func TestLoRARunOverABF16BaseResumesExactly(t *testing.T) {
	longtests.SkipShort(t, "three LoRA runs (TestLoRARunTrainsAdaptersAndResumesExactly covers the paths)")
	cfg := loraConfig(t)
	cfg.LoRA.BF16Base = true
	db := openDB(t)
	env := testEnv(t, db)
	start := env.Bundle.Model.ParamValues()
	e, err := New(cfg, env, "lora16")
	if err != nil {
		t.Fatal(err)
	}
	if !env.Bundle.Model.BaseBF16() || e.Cfg.Base != store.Hash(f32bytes(start)) {
		t.Fatalf("bfloat16 base %v, base blob %s", env.Bundle.Model.BaseBF16(), ShortHash(e.Cfg.Base))
	}
	rounded := env.Bundle.Model.ParamValues()
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(start, rounded) || !slices.Equal(rounded, env.Bundle.Model.ParamValues()) {
		t.Fatal("the base was not rounded, or the run moved it")
	}
	dbB := openDB(t)
	b, err := New(cfg, testEnv(t, dbB), "lora16")
	if err != nil {
		t.Fatal(err)
	}
	saves := 0
	b.stopAfter = func(State) bool { saves++; return saves == 5 }
	if _, err := b.Run(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("stop: %v", err)
	}
	envC := testEnv(t, dbB)
	envC.Bundle = nil // rebuilt: the base blob, rounded, then the adapters
	resumeMatches(t, envC, "lora16", sum, "LoRA run over a bfloat16 base stopped at its 5th save")
}
