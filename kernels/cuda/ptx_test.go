package cuda

import (
	"os"
	"testing"
)

func TestPTXIsCurrent(t *testing.T) {
	ptx, err := os.ReadFile("whale.ptx")
	if err != nil {
		t.Fatalf("%v (generate it with kernels/cuda/gen.sh)", err)
	}
	rec, err := RecordedSum(string(ptx))
	if err != nil {
		t.Fatal(err)
	}
	src, err := SourceSum("src")
	if err != nil {
		t.Fatal(err)
	}
	if rec != src {
		t.Fatalf("whale.ptx was built from sources %s, but src/ now sums to %s: run kernels/cuda/gen.sh", rec, src)
	}
}
