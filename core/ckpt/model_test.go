package ckpt

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/core/model"
	"whale/kernels"
)

func tinyModel(t *testing.T, seed uint64) *model.Model {
	t.Helper()
	cfg, err := model.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg, kernels.NewCPU(), seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelRoundTrip(t *testing.T) {
	m := tinyModel(t, 3)
	dir := t.TempDir()
	for _, dt := range []DType{F32, BF16, F16} {
		path := filepath.Join(dir, string(dt)+".safetensors")
		if err := SaveModel(path, m, dt, map[string]string{"seed": "3"}); err != nil {
			t.Fatal(err)
		}
		got, meta, err := LoadModel(path, kernels.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		if meta["seed"] != "3" || got.Config != m.Config {
			t.Fatalf("%s: metadata %v / config %+v", dt, meta, got.Config)
		}
		want, have := m.ParamValues(), got.ParamValues()
		for i := range want {
			var exact float32
			switch dt {
			case F32:
				exact = want[i]
			case BF16:
				exact = bf16ToF32(bf16FromF32(want[i]))
			case F16:
				exact = f16ToF32(f16FromF32(want[i]))
			}
			if have[i] != exact {
				t.Fatalf("%s: parameter %d = %g, want %g (the stored value, rounded once)", dt, i, have[i], exact)
			}
		}
	}
}

func TestLoadModelRefusesMismatches(t *testing.T) {
	m := tinyModel(t, 1)
	ts, _ := Tensors(m, F32)
	good, _ := EncodeModel(m, F32, nil)
	f, _ := Decode(good, "x")
	meta := f.Meta
	dir := t.TempDir()
	write := func(name string, ts []Tensor, meta map[string]string) string {
		p := filepath.Join(dir, name)
		if err := WriteFile(p, ts, meta); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var missing, reshaped, extra []Tensor
	for _, x := range ts {
		if x.Name != "model.norm.weight" {
			missing = append(missing, x)
		}
		if x.Name == "model.layers.0.mlp.up_proj.weight" {
			x.Shape = []int{x.Shape[1], x.Shape[0]}
		}
		reshaped = append(reshaped, x)
	}
	extra = append(append(extra, ts...), Tensor{Name: "model.layers.9.mlp.up_proj.weight", Shape: []int{1}, DType: F32, Data: []float32{0}})
	cases := map[string]string{
		write("missing", missing, meta):   "model.norm.weight",
		write("reshaped", reshaped, meta): "model.layers.0.mlp.up_proj.weight has shape",
		write("extra", extra, meta):       "model.layers.9.mlp.up_proj.weight is not a parameter",
		write("noconfig", ts, nil):        "not a whale model file",
	}
	trunc := filepath.Join(dir, "truncated")
	os.WriteFile(trunc, good[:len(good)-10], 0o644)
	cases[trunc] = "truncated"
	for path, want := range cases {
		_, _, err := LoadModel(path, kernels.NewCPU())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", filepath.Base(path), err, want)
		}
	}
	_, _, err := LoadModel(filepath.Join(dir, "missing"), kernels.NewCPU())
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor error does not wrap ErrNotFound: %v", err)
	}
}
