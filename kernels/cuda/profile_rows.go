package cuda

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"
)

// The rows of the CUDA backend's per-op profile (profile.go) and their
// text form, which kernels/cuda/check/combine.py reads back. Kept out of
// the cuda build tag so that the format is tested without a GPU.

// ProfileRow is the time spent in one op (kernels.Backend method name,
// with the GEMM layout and m×k×n for products).
type ProfileRow struct {
	Op    string
	Count int
	GPU   time.Duration // summed stream time between the op's events
	Host  time.Duration // summed wall time inside the call
}

// hostWait names the row of synchronisations: the host waiting for the
// stream (inside Store, SumSq, Sync and the like).
const hostWait = "(host waits for the GPU)"

// sortProfile orders rows by GPU time, most first, then by name, with
// the host's waits last.
func sortProfile(rows []ProfileRow) {
	slices.SortFunc(rows, func(x, y ProfileRow) int {
		if (x.Op == hostWait) != (y.Op == hostWait) {
			if x.Op == hostWait {
				return 1
			}
			return -1
		}
		if x.GPU != y.GPU {
			if x.GPU > y.GPU {
				return -1
			}
			return 1
		}
		return cmp.Compare(x.Op, y.Op)
	})
}

// WriteProfile prints rows as a table, one line per row, each line
// "cuda-profile<TAB>label<TAB>op<TAB>count<TAB>GPU ms<TAB>host ms<TAB>GPU % of
// wall" (check/combine.py reads these lines), after a summary line
// "cuda-profile<TAB>label<TAB>(wall)<TAB>runs<TAB>summed GPU ms<TAB>wall ms<TAB>%".
// wall is the measured time the rows were gathered over, in runs runs.
func WriteProfile(w io.Writer, label string, rows []ProfileRow, wall time.Duration, runs int) error {
	var gpu time.Duration
	for _, r := range rows {
		gpu += r.GPU
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(d time.Duration) float64 {
		if wall <= 0 {
			return 0
		}
		return 100 * float64(d) / float64(wall)
	}
	if _, err := fmt.Fprintf(w, "cuda-profile\t%s\t%s\t%d\t%.3f\t%.3f\t%.1f\n", label, "(wall)", runs, ms(gpu), ms(wall), pct(gpu)); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "cuda-profile\t%s\t%s\t%d\t%.3f\t%.3f\t%.1f\n", label, r.Op, r.Count, ms(r.GPU), ms(r.Host), pct(r.GPU)); err != nil {
			return err
		}
	}
	return nil
}
