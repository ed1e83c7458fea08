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

// TestBackendLogitsAreNotChargedToActivations: a backend's larger head
// chunk does not change how many layers a training pass keeps (or whether
// it keeps h) under an activation budget: the layers kept are those the
// default chunk would give, at every budget from nothing kept to all.
func TestBackendLogitsAreNotChargedToActivations(t *testing.T) {
	defer func(v int) { headLogits = v }(headLogits)
	headLogits = 2 * 19 // tiny's vocabulary is 19: 2 rows by default
	plain := tinyModel(t, kernels.NewCPU(), 1)
	big := tinyModel(t, budgeted{kernels.NewCPU(), 1000 * 19}, 1)
	const B, T = 3, 9
	if big.headExtraBytes(B*T) <= 0 {
		t.Fatalf("a budget of 1000 rows adds %d bytes to the head", big.headExtraBytes(B*T))
	}
	full := 4 * int64(plain.actsLenH(B, T, plain.d.L-1, true, true))
	kept := map[int]bool{}
	for budget := int64(1); budget <= full+64; budget += 16 {
		k1, k2 := plain.keepFor(B, T, budget), big.keepFor(B, T, budget)
		h1, h2 := plain.ownHFor(B, T, k1, budget), big.ownHFor(B, T, k2, budget)
		if k1 != k2 || h1 != h2 {
			t.Fatalf("budget %d bytes: keep %d, own h %v with the default head chunk; %d, %v with the backend's", budget, k1, h1, k2, h2)
		}
		kept[k1] = true
	}
	if len(kept) < 2 {
		t.Errorf("the budgets tried keep only %v layers", kept)
	}
}
