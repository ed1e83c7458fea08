package model

import (
	"math"
	"testing"

	"whale/kernels"
)

// budgeted is the CPU backend with a logits budget (kernels.LogitsBudgeter).
type budgeted struct {
	kernels.Backend
	logits int
}

func (b budgeted) LogitsBudget() int { return b.logits }

// TestBackendLogitsBudget: a backend's logits budget sets the head's chunk
// (rows of logits at once); a budget of 0, or none, keeps the default; the
// loss is the same whichever chunk the head runs in (to float64 rounding:
// the rows' losses are added in the same order, but the CPU's float64
// kernels may block a product differently by its row count).
func TestBackendLogitsBudget(t *testing.T) {
	seqs := testBatch(19, 5) // tiny's vocabulary is 19
	var losses []float64
	for _, c := range []struct {
		be      kernels.Backend
		wantRow func(N, V int) int
	}{
		{kernels.NewCPU64(), func(N, V int) int { return min(N, headLogits/V) }},
		{budgeted{kernels.NewCPU64(), 0}, func(N, V int) int { return min(N, headLogits/V) }},
		{budgeted{kernels.NewCPU64(), 3 * 19}, func(N, V int) int { return 3 }},
		{budgeted{kernels.NewCPU64(), 1}, func(N, V int) int { return 1 }},
	} {
		m := tinyModel(t, c.be, 1)
		randomize(m, 3)
		loss, err := m.Loss(seqs)
		if err != nil {
			t.Fatal(err)
		}
		N := m.act.B * m.act.T
		if want := c.wantRow(N, m.d.V); m.act.hc != want {
			t.Errorf("%T: the head runs in chunks of %d rows of %d, want %d", c.be, m.act.hc, N, want)
		}
		losses = append(losses, loss)
	}
	for i, l := range losses[1:] {
		if math.Abs(l-losses[0]) > 1e-12*math.Abs(losses[0]) {
			t.Errorf("loss with budget %d: %v, default %v", i+1, l, losses[0])
		}
	}
}
