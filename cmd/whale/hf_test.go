package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"whale/core/bundle"
	"whale/core/ckpt"
	"whale/core/model"
	"whale/core/tokenizer"
	"whale/internal/longtests"
	"whale/kernels"
)

// writeHFFolder writes a random-weight Qwen3-shaped model as a Hugging
// Face folder (bf16 weights) whose tokenizer.json is a file of its own
// (not byte for byte the byte tokenizer's, so it travels as a file) and
// whose generation_config.json ends completions at <|endoftext|> too.
// It returns the tokenizer file's bytes.
func writeHFFolder(t *testing.T, dir string) []byte {
	t.Helper()
	cfg := model.Config{ModelType: "qwen3", VocabSize: 320, HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 4096, HiddenAct: "silu"}
	m, err := model.New(cfg, kernels.NewCPU(), 3)
	if err != nil {
		t.Fatal(err)
	}
	tj := append(tokenizer.BytesJSON(), '\n')
	tok, err := tokenizer.Parse(tj)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.New(m, tok, tj, bundle.Generation{EOS: []int32{tokenizer.BytesEndOfText}}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.WriteDir(dir, b, ckpt.BF16, nil); err != nil {
		t.Fatal(err)
	}
	return tj
}

// TestRunTrainsAHuggingFaceFolder: `whale run --model DIR` trains a
// random-weight Qwen3-shaped Hugging Face folder through the real wiring;
// the run records the folder and its tokenizer, `whale gc` keeps that
// tokenizer, `whale export --format hf` writes it back out, and
// `whale eval --model DIR` scores the exported folder.
func TestRunTrainsAHuggingFaceFolder(t *testing.T) {
	longtests.SkipShort(t, "a tiny run of a tiny model")
	dir := filepath.Join(t.TempDir(), "qwen3-tiny")
	tj := writeHFFolder(t, dir)
	db := filepath.Join(t.TempDir(), "w.db")
	out, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--model", dir, "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		RunID    string `json:"run_id"`
		Rounds   int    `json:"rounds"`
		BestCkpt string `json:"best_checkpoint"`
	}
	lastJSONLine(t, out, &sum)
	if sum.Rounds != 2 || sum.BestCkpt == "" {
		t.Fatalf("summary %+v", sum)
	}
	out, err = runWhale(t, "show", sum.RunID, "--db", db, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var show struct {
		Config struct {
			Tokenizer string `json:"tokenizer"`
			Start     struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"start"`
		} `json:"config"`
	}
	lastJSONLine(t, out, &show)
	h := sha256.Sum256(tj)
	if show.Config.Tokenizer != hex.EncodeToString(h[:]) || show.Config.Start.Kind != bundle.KindDir || show.Config.Start.Name != dir {
		t.Fatalf("the run recorded %+v, want the folder and its tokenizer's sha256", show.Config)
	}
	// gc keeps the tokenizer: the best checkpoint pins it.
	if _, err := runWhale(t, "gc", "--keep", "0", "--db", db, "--json"); err != nil {
		t.Fatal(err)
	}
	exp := filepath.Join(t.TempDir(), "exported")
	if _, err := runWhale(t, "export", sum.BestCkpt, "--format", "hf", "--dtype", "bf16", "--out", exp, "--db", db, "--json"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(exp, bundle.TokenizerFile))
	if err != nil || !bytes.Equal(got, tj) {
		t.Fatalf("exported tokenizer.json differs from the model's (%v)", err)
	}
	out, err = runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--split", "val", "--n", "2", "--max-new-tokens", "8", "--model", exp, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Model string `json:"model"`
		Hash  string `json:"model_hash"`
	}
	lastJSONLine(t, out, &rep)
	if rep.Model != exp || rep.Hash == "" {
		t.Fatalf("eval report names model %q hash %q", rep.Model, rep.Hash)
	}
	var cfg map[string]any
	if b, err := os.ReadFile(filepath.Join(exp, ckpt.HFConfig)); err != nil || json.Unmarshal(b, &cfg) != nil || cfg["torch_dtype"] != "bfloat16" {
		t.Fatalf("exported config.json %v (%v)", cfg, err)
	}
}

func TestModelFlagRefusesAnUnsupportedFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	writeHFFolder(t, dir)
	cfgPath := filepath.Join(dir, ckpt.HFConfig)
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["rope_scaling"] = map[string]any{"rope_type": "yarn", "factor": 4}
	b, _ = json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runWhale(t, "eval", "--domain", "math", "--harness", "h0", "--n", "1", "--model", dir)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(cfgPath+": field rope_scaling")) {
		t.Fatalf("error %v, want one naming %s and rope_scaling", err, cfgPath)
	}
}

// TestRunTrainsAHuggingFaceFolderWithLoRA: `whale run --model DIR
// --lora-rank R` trains adapters on a Qwen3-shaped Hugging Face folder:
// first a random-weight one (the wiring: the run records its adapters
// and frozen base, gc keeps the base, export writes every untargeted
// tensor bit for bit), then the embedded model written as a folder, whose
// rollouts earn rewards, so its adapters train: the export merges them,
// and exactly the targeted projections differ from the folder's.
func TestRunTrainsAHuggingFaceFolderWithLoRA(t *testing.T) {
	longtests.SkipShort(t, "two tiny runs")
	random := filepath.Join(t.TempDir(), "qwen3-random")
	writeHFFolder(t, random)
	embedded := filepath.Join(t.TempDir(), "qwen3-embedded")
	b, err := bundle.Embedded(kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.WriteDir(embedded, b, ckpt.F32, nil); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{random, embedded} {
		db := filepath.Join(t.TempDir(), "w.db")
		out, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--model", dir, "--db", db,
			"--lora-rank", "4", "--lora-targets", "q,v,down", "--lr", "1e-3", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var sum struct {
			RunID    string `json:"run_id"`
			BestCkpt string `json:"best_checkpoint"`
			Phases   []struct {
				Kept float64 `json:"kept_fraction"`
			} `json:"phases"`
		}
		lastJSONLine(t, out, &sum)
		out, err = runWhale(t, "show", sum.RunID, "--db", db, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var show struct {
			Config struct {
				LoRA model.LoRAConfig `json:"lora"`
				Base string           `json:"base"`
			} `json:"config"`
		}
		lastJSONLine(t, out, &show)
		if l := show.Config.LoRA; l.Rank != 4 || l.Alpha != 8 || !slices.Equal(l.Targets, []string{"q", "v", "down"}) || show.Config.Base == "" {
			t.Fatalf("%s: the run recorded LoRA %+v over base %q", dir, l, show.Config.Base)
		}
		// The last weight phase's checkpoint: the adapters after every step.
		exp := filepath.Join(t.TempDir(), "exported")
		if _, err := runWhale(t, "export", sum.RunID+"/02-weights", "--format", "hf", "--dtype", "f32", "--out", exp, "--db", db, "--json"); err != nil {
			t.Fatal(err)
		}
		// gc keeps the frozen weights: the kept checkpoint still exports.
		if out, err := runWhale(t, "show", sum.RunID, "--db", db); err != nil || !strings.Contains(out, "LoRA: rank 4, alpha 8 on q, v, down; frozen weights ") {
			t.Fatalf("show of a LoRA run: %v\n%s", err, out)
		}
		if _, err := runWhale(t, "gc", "--keep", "0", "--db", db, "--json"); err != nil {
			t.Fatal(err)
		}
		if _, err := runWhale(t, "export", sum.BestCkpt, "--format", "gguf", "--out", t.TempDir(), "--db", db, "--json"); err != nil {
			t.Fatalf("export after gc: %v", err)
		}
		trained := dir == embedded
		if trained && (sum.Phases[0].Kept == 0 || sum.Phases[2].Kept == 0) {
			t.Fatalf("the embedded model kept no samples (%+v): its adapters would not train", sum.Phases)
		}
		before, err := bundle.LoadDir(dir, kernels.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		after, err := bundle.LoadDir(exp, kernels.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range before.Model.Params() {
			a, _ := before.Model.ReadParam(p.Name)
			b, err := after.Model.ReadParam(p.Name)
			if err != nil {
				t.Fatal(err)
			}
			targeted := strings.Contains(p.Name, "q_proj.weight") || strings.Contains(p.Name, "v_proj.weight") || strings.Contains(p.Name, "down_proj.weight")
			if same := slices.Equal(a, b); !same && !(targeted && trained) || same && targeted && trained {
				t.Errorf("%s: %s: targeted %v, trained %v, but unchanged %v in the export", dir, p.Name, targeted, trained, same)
			}
		}
	}
	db := filepath.Join(t.TempDir(), "w.db")
	if _, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--lora-alpha", "3", "--db", db); err == nil || !strings.Contains(err.Error(), "--lora-rank") {
		t.Fatalf("--lora-alpha without --lora-rank: %v", err)
	}
	if _, err := runWhale(t, "run", "--headless", "--domain", "math", "--preset", "tiny", "--lora-rank", "2", "--lora-targets", "qkv", "--db", db); err == nil || !strings.Contains(err.Error(), `"qkv"`) {
		t.Fatalf("a bad LoRA target: %v", err)
	}
}
