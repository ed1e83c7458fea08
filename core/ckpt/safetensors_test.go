package ckpt

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestHalfKnownVectors(t *testing.T) {
	bf := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3F80}, {-2, 0xC000}, {0, 0},
		{math.Float32frombits(0x3F808000), 0x3F80}, // tie, even stays
		{math.Float32frombits(0x3F818000), 0x3F82}, // tie, odd rounds up
		{math.Float32frombits(0x3F808001), 0x3F81}, // above the tie
		{float32(math.Inf(1)), 0x7F80}, {float32(math.Inf(-1)), 0xFF80},
	}
	for _, c := range bf {
		if got := bf16FromF32(c.in); got != c.want {
			t.Errorf("bf16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if n := bf16FromF32(float32(math.NaN())); bf16ToF32(n) == bf16ToF32(n) {
		t.Errorf("bf16(NaN) = %#04x is not a NaN", n)
	}
	f16 := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3C00}, {-2, 0xC000}, {0.1, 0x2E66}, {65504, 0x7BFF}, {65520, 0x7C00},
		{1e6, 0x7C00}, {float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -14)), 0x0400},
		{1e-9, 0}, {float32(math.Ldexp(3, -26)), 0x0001}, // 0.75 ulp rounds up to the smallest subnormal
	}
	for _, c := range f16 {
		if got := f16FromF32(c.in); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	// Every finite half round-trips exactly through float32.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 {
			continue
		}
		if got := f16FromF32(f16ToF32(uint16(h))); got != uint16(h) && !(h == 0x8000 && got == 0x8000) {
			t.Fatalf("f16 %#04x round trip gave %#04x", h, got)
		}
	}
}

func sample() []Tensor {
	return []Tensor{
		{Name: "model.norm.weight", Shape: []int{3}, DType: F32, Data: []float32{1, -2.5, 3e-7}},
		{Name: "model.embed_tokens.weight", Shape: []int{2, 2}, DType: BF16, Data: []float32{1, 0.5, -4, 2}},
		{Name: "lm_head.weight", Shape: []int{2, 2}, DType: F16, Data: []float32{0.25, -1, 8, 0}},
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	if err := WriteFile(path, sample(), map[string]string{"seed": "7"}); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Meta["seed"] != "7" {
		t.Fatalf("metadata %v", f.Meta)
	}
	for _, want := range sample() {
		got, err := f.Float32(want.Name, want.Shape)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want.Data[i] { // all sample values are exact in their dtype
				t.Fatalf("%s[%d] = %g, want %g", want.Name, i, got[i], want.Data[i])
			}
		}
	}
	a, _ := Encode(sample(), nil)
	rev := sample()
	rev[0], rev[2] = rev[2], rev[0]
	b, _ := Encode(rev, nil)
	if string(a) != string(b) {
		t.Fatal("encoding depends on the order tensors are given in")
	}
}

func TestRefusesBadFiles(t *testing.T) {
	good, _ := Encode(sample(), nil)
	f, _ := Decode(good, "m")
	for _, c := range []struct {
		name, want string
		err        func() error
	}{
		{"wrong shape", "lm_head.weight has shape [2 2], the model expects [4]", func() error { _, err := f.Float32("lm_head.weight", []int{4}); return err }},
		{"missing", "tensor q_proj", func() error { _, err := f.Float32("q_proj", []int{1}); return err }},
		{"truncated", "outside the", func() error { _, err := Decode(good[:len(good)-3], "m"); return err }},
		{"short", "truncated", func() error { _, err := Decode(good[:5], "m"); return err }},
		{"dtype", `tensor x: unsupported dtype "I64"`, func() error {
			_, err := Decode(withHeader(`{"x":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, 8), "m")
			return err
		}},
		{"size mismatch", "tensor x: shape [3] of F32 needs 12 bytes", func() error {
			_, err := Decode(withHeader(`{"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), "m")
			return err
		}},
		{"overlap", "overlap", func() error {
			_, err := Decode(withHeader(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "m")
			return err
		}},
	} {
		err := c.err()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := f.Float32("nope", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing tensor error %v does not wrap ErrNotFound", err)
	}
	if _, err := Encode([]Tensor{{Name: "a", Shape: []int{2}, DType: F32, Data: []float32{1}}}, nil); err == nil {
		t.Error("Encode accepted data that does not fill its shape")
	}
}

func withHeader(h string, dataBytes int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	return append(b, make([]byte, dataBytes)...)
}

func FuzzDecode(f *testing.F) {
	good, _ := Encode(sample(), map[string]string{"k": "v"})
	f.Add(good)
	f.Add(withHeader(`{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Decode(b, "fuzz")
		if err != nil {
			return
		}
		for _, n := range file.Names() {
			_, shape, _ := file.Info(n)
			if _, err := file.Float32(n, shape); err != nil {
				t.Fatalf("checked tensor %s unreadable: %v", n, err)
			}
		}
	})
}
