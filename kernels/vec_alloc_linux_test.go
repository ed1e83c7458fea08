package kernels

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping of this process that holds
// addr, from /proc/self/smaps.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			lo, hi, ok := strings.Cut(fields[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = ok && err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if in {
			if rest, ok := strings.CutPrefix(line, "VmFlags:"); ok {
				return strings.Fields(rest)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// The CPU backend's large tensors come from the Go heap with their whole 2
// MB pages advised for huge pages (heapHugePages), and stay zeroed Go
// memory like any other.
func TestAllocAdvisesHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(mode), "[never]") {
		t.Skip("no transparent huge pages here")
	}
	be := NewCPU()
	for _, bf := range []bool{false, true} {
		n := 3 * hugePage / 4 // 6 MB in float32, and 2n elements in bf16: at least two whole pages either way
		var x Tensor
		var p unsafe.Pointer
		if bf {
			x = be.AllocBF16(2 * n)
			b := x.buf.([]uint16)
			p = unsafe.Pointer(&b[0])
		} else {
			x = be.Alloc(n)
			f := x.buf.([]float32)
			for i, v := range f {
				if v != 0 {
					t.Fatalf("element %d of a new tensor is %v", i, v)
				}
			}
			p = unsafe.Pointer(&f[0])
		}
		page := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
		if flags := vmFlags(t, page); !slices.Contains(flags, "hg") {
			t.Errorf("bf16 %v: the mapping of a %d-element tensor's first whole 2 MB page has VmFlags %v, want hg (MADV_HUGEPAGE)", bf, x.Len(), flags)
		}
	}
}
