package basemodel_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"whale/core/basemodel"
	"whale/core/model"
	"whale/internal/longtests"
	"whale/kernels"
)

// TestKVBF16NumericsOnTheEmbeddedModel (WHALE_LONG_TESTS=1, about a
// minute on two cores) samples 32 arithmetic prompts at temperature 1,
// 128 tokens each, from the embedded model with float32 and with bfloat16
// KV caches (model.SamplerOptions.KVBF16) and compares them: how many
// completions stay identical, how many tokens come before the first
// difference, and how far the log-probabilities of the common prefix
// move. Rounding keys and values to bfloat16 moves a log-probability by
// ~1e-3 on average; a misplaced position or a wrong rounding would move
// every one by far more and change completions from their first tokens.
// It logs the figures docs/PERFORMANCE.md quotes.
func TestKVBF16NumericsOnTheEmbeddedModel(t *testing.T) {
	longtests.Skip(t, "about a minute")
	m, err := basemodel.Load(kernels.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	var reqs []model.Request
	for i := 0; i < 32; i++ {
		p := []byte(fmt.Sprintf("<|im_start|>user\nWhat is %d + %d * %d? Think step by step.<|im_end|>\n<|im_start|>assistant\n", 17*i+3, i*i+1, 7+i))
		toks := make([]int32, len(p))
		for j, c := range p {
			toks[j] = int32(c)
		}
		reqs = append(reqs, model.Request{Key: fmt.Sprint(i), Prompt: toks, MaxNewTokens: 128, Temperature: 1, Seed: 5})
	}
	a, err := model.NewSampler(m, model.SamplerOptions{}).Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := model.NewSampler(m, model.SamplerOptions{KVBF16: true}).Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	same, tot, seqSame := 0, 0, 0
	var maxd, sumd float64
	nd := 0
	for i := range a {
		n := min(len(a[i].Tokens), len(b[i].Tokens))
		div := n
		for j := 0; j < n; j++ {
			if a[i].Tokens[j] != b[i].Tokens[j] {
				div = j
				break
			}
		}
		for j := 0; j < div; j++ {
			d := math.Abs(float64(a[i].LogProbs[j] - b[i].LogProbs[j]))
			maxd = max(maxd, d)
			sumd += d
			nd++
		}
		same += div
		tot += len(a[i].Tokens)
		if div == len(a[i].Tokens) && len(a[i].Tokens) == len(b[i].Tokens) {
			seqSame++
		}
	}
	mean := sumd / float64(nd)
	if !(mean <= 0.01) || 2*same < tot {
		t.Errorf("mean log-probability change %.3g (want ≤ 0.01), %d of %d tokens before the first difference (want half or more)", mean, same, tot)
	}
	t.Logf("identical completions %d of %d; tokens before the first difference %d of %d; log-prob |diff| on the common prefix: max %.3g mean %.3g", seqSame, len(a), same, tot, maxd, mean)
}
