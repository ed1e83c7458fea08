package kernels

import (
	"strings"
	"testing"
)

func TestOpenBackendByName(t *testing.T) {
	for _, name := range []string{"", "cpu"} {
		be, err := OpenBackend(name)
		if err != nil || be.Name() != "cpu/float32" {
			t.Fatalf("OpenBackend(%q): %v, %v", name, be, err)
		}
	}
	if _, err := OpenBackend("tpu"); err == nil || !strings.Contains(err.Error(), "unknown") || !strings.Contains(err.Error(), "cpu") {
		t.Fatalf("unknown backend: %v", err)
	}
	RegisterBackend("test-twin", func() (Backend, error) { return NewCPU64(), nil })
	if be, err := OpenBackend("test-twin"); err != nil || be.Name() != "cpu/float64" {
		t.Fatalf("registered backend: %v, %v", be, err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of one name did not panic")
		}
	}()
	RegisterBackend("test-twin", func() (Backend, error) { return NewCPU(), nil })
}

func TestOpenCUDAWithoutTheTagSaysHow(t *testing.T) {
	if _, ok := registry.open["cuda"]; ok {
		t.Skip("this test binary has the cuda backend")
	}
	_, err := OpenBackend("cuda")
	if err == nil || !strings.Contains(err.Error(), "-tags cuda") {
		t.Fatalf("cuda without the tag: %v", err)
	}
}
