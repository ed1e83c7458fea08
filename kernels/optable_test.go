package kernels_test

import (
	"math"
	"runtime"
	"testing"

	"whale/internal/longtests"
	"whale/kernels"
	"whale/kernels/kerneltest"
)

// cpuCases is the table as the CPU backend's tests run it: the
// model-sized cases (whose float64 reference takes a minute on two cores)
// only with the long tests.
func cpuCases() []kerneltest.Case {
	var cs []kerneltest.Case
	for _, c := range kerneltest.Cases() {
		if !c.Large || longtests.Enabled() {
			cs = append(cs, c)
		}
	}
	return cs
}

// TestCPUOpsMatchReference runs the op table (kernels/kerneltest) on the
// float32 CPU backend against the float64 reference, with views aligned
// and at an odd offset: every output within its op's tolerance (exact
// ones bit for bit), the guards around every view untouched, and two runs
// bit-identical.
func TestCPUOpsMatchReference(t *testing.T) {
	cs := cpuCases()
	if !longtests.Enabled() {
		t.Logf("%d of the table's cases; the model-sized ones run with %s=1", len(cs), longtests.Env)
	}
	for _, pad := range kerneltest.Pads {
		err := kerneltest.CheckAll(kernels.NewCPU(), cs, pad, runtime.GOMAXPROCS(0), func(c kerneltest.Case, r kerneltest.Result) {
			for _, f := range r.Failures() {
				t.Errorf("%s (guards %d): %s", c.Name, pad, f)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCPUOpsThreadInvariant checks that every op of the table gives
// bit-identical float32 results with 1, 2 and 3 threads.
func TestCPUOpsThreadInvariant(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	be := kernels.NewCPU()
	for _, c := range cpuCases() {
		kernels.SetThreads(1)
		want, err := kerneltest.Run(be, c, kerneltest.Pads[0])
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for _, n := range []int{2, 3} {
			kernels.SetThreads(n)
			got, err := kerneltest.Run(be, c, kerneltest.Pads[0])
			if err != nil {
				t.Fatalf("%s with %d threads: %v", c.Name, n, err)
			}
			for i := range want {
				for j, w := range want[i].Vals {
					if g := got[i].Vals[j]; math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
						t.Fatalf("%s output %s element %d: %d threads give %v, 1 thread %v", c.Name, want[i].Name, j, n, g, w)
					}
				}
			}
		}
	}
}
