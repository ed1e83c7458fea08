//go:build cuda

package cuda

import (
	"gorgonia.org/cu"

	"whale/kernels"
)

var _ kernels.LogitsBudgeter = (*Backend)(nil)

// maxLogits bounds LogitsBudget: 2^28 float32 logits (1 GiB) hold a
// 0.6B model's 151,936-token vocabulary for 1,766 rows, a training step
// of 4 × 256 tokens in one head chunk.
const maxLogits = 1 << 28

// LogitsBudget implements kernels.LogitsBudgeter: a 32nd of the device's
// memory in float32 logits, at most maxLogits. The model's default (8M
// logits, chosen for the CPU's caches) cut a 0.6B training step's head
// into 18–19 products of 55 rows, each too thin for the GPU; 0 (the
// default) if the device's memory cannot be read.
func (b *Backend) LogitsBudget() int {
	defer b.lock()()
	_, total, err := cu.MemInfo()
	if err != nil || total <= 0 {
		return 0
	}
	return int(min(total/32/4, maxLogits))
}
