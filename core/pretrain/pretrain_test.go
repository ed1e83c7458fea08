package pretrain

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/ckpt"
	"whale/kernels"
)

func tinyOptions(out string) Options {
	o := DefaultOptions()
	o.Out = out
	o.Preset = "tiny"
	o.Config = TinyConfig()
	o.Steps = 5
	o.Batch = 2
	o.Warmup = 2
	o.CheckpointEvery = 2
	o.Corpus.TasksPerDomain = 6
	return o
}

func TestTrainDeterministicAndResumable(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := filepath.Join(dir, "a.safetensors")
	if _, err := Train(ctx, tinyOptions(a)); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.safetensors")
	if _, err := Train(ctx, tinyOptions(b)); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two runs with the same seed wrote different bytes")
	}

	// Interrupted after 3 steps (a checkpoint is written when stopping),
	// then resumed: the same bytes as the uninterrupted run.
	c := filepath.Join(dir, "c.safetensors")
	o := tinyOptions(c)
	o.StopAfter = 3
	res, err := Train(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Done || res.Steps != 3 {
		t.Fatalf("stopped run: done %v at step %d, want not done at 3", res.Done, res.Steps)
	}
	o.StopAfter = 0
	o.Resume = true
	if res, err = Train(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !res.Done || res.Steps != 5 {
		t.Fatalf("resumed run: done %v at step %d", res.Done, res.Steps)
	}
	cb, _ := os.ReadFile(c)
	if !bytes.Equal(ab, cb) {
		t.Fatal("resumed run wrote different bytes from the uninterrupted one")
	}

	m, meta, err := ckpt.LoadModel(a, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if m.Config != TinyConfig() {
		t.Fatalf("config %+v", m.Config)
	}
	for _, k := range []string{ckpt.MetaSeed, ckpt.MetaSteps, ckpt.MetaCorpusHash, ckpt.MetaTrain} {
		if meta[k] == "" {
			t.Errorf("metadata %s missing", k)
		}
	}
	if meta[ckpt.MetaSteps] != "5" {
		t.Errorf("steps %q", meta[ckpt.MetaSteps])
	}
	if strings.Contains(meta[ckpt.MetaTrain], dir) {
		t.Error("metadata records a path")
	}

	// A different seed is a different run, and resuming it from c's
	// resume point is refused.
	o = tinyOptions(c)
	o.Seed = 2
	o.Resume = true
	if _, err := Train(ctx, o); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Fatalf("resume with another seed: %v", err)
	}
}

func TestTrainFromInit(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := filepath.Join(dir, "a.safetensors")
	if _, err := Train(ctx, tinyOptions(a)); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.safetensors")
	o := tinyOptions(b)
	o.Init = a + resumeSuffix
	o.Steps = 2
	if _, err := Train(ctx, o); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(dir, "c.safetensors")
	o2 := tinyOptions(c)
	o2.Steps = 2
	if _, err := Train(ctx, o2); err != nil {
		t.Fatal(err)
	}
	_, meta, err := ckpt.LoadModel(b, kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(meta[ckpt.MetaTrain], `"init_sha256":"`) {
		t.Fatalf("continuation run does not record its init: %s", meta[ckpt.MetaTrain])
	}
	bb, _ := os.ReadFile(b)
	cb, _ := os.ReadFile(c)
	if bytes.Equal(bb, cb) {
		t.Fatal("starting from init gave the same model as starting from the seed")
	}
	o.Init = filepath.Join(dir, "missing")
	if _, err := Train(ctx, o); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing init: %v", err)
	}
}
