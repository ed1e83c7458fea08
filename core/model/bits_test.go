package model

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"whale/kernels"
)

// recordedBits are hashes of what the sampler and the forward pass
// produced at commit 1764270, before sample.go was split and training and
// sampling were given one layer loop (pass.go), by the amd64 assembly
// kernels (AVX-512 and AVX2 give the same bits; the pure-Go kernels of
// WHALE_NOASM or another architecture sum some products in another
// order, so the test is skipped there): for each of the
// sampler's test models and options, the tokens, log-probabilities and
// entropies of mixedRequests sampled twice on one sampler (the second
// time through the prefix cache), and of each model the logits of a
// 40-token forward pass and the loss of four sequences. The bfloat16 KV
// entries were recorded when that option was added. A change that moves
// any of them changes runs: it must be meant, and said where the bits
// are recorded (docs/PERFORMANCE.md).
var recordedBits = map[string]uint64{
	"gqa4/default": 0xab17a6b1bdcbd919, "gqa4/bf16": 0x3a1889540614c90d, "gqa4/exact": 0xab17a6b1bdcbd919, "gqa4/maxbatch5": 0xab17a6b1bdcbd919,
	"gqa4/forward":   0x665839b35223e64f,
	"medium/default": 0x3c74bca8ea65b605, "medium/bf16": 0x190aaab27e7302ed, "medium/exact": 0x3c74bca8ea65b605, "medium/maxbatch5": 0x3c74bca8ea65b605,
	"medium/forward": 0x39d52f22f7badc62,
	"tiny/default":   0x51c5126cfc22c6c1, "tiny/bf16": 0x9114e8a88b8dbdb9, "tiny/exact": 0x51c5126cfc22c6c1, "tiny/maxbatch5": 0x51c5126cfc22c6c1,
	"tiny/forward":     0x7ae11b5be1b4c91c,
	"unpacked/default": 0x47fd1432494893ed, "unpacked/bf16": 0x12cd28cef5014fd, "unpacked/exact": 0xbdf3e1ae4805dc21, "unpacked/maxbatch5": 0xbdf3e1ae4805dc21,
	"unpacked/forward": 0x7ae11b5be1b4c91c,
	// wide (views of the fused packs) was recorded at 97a70e5, before
	// PackNTBF16 interleaved its groups of four panels.
	"wide/default": 0x6597b7594b78ac89, "wide/bf16": 0xfe7cfe0d378d9f61, "wide/exact": 0x6597b7594b78ac89, "wide/maxbatch5": 0x6597b7594b78ac89,
	"wide/forward": 0x11a21af41976d684, "wide/kvbf16": 0xf3af90dd163ba895,
	// unpacked hides the backend's bfloat16 KV caches too: float32 KV.
	"gqa4/kvbf16": 0xc2437dece42fd53d, "medium/kvbf16": 0xce5ede17fa912725, "tiny/kvbf16": 0x244beca614f6f959, "unpacked/kvbf16": 0x47fd1432494893ed,
}

// TestSamplingAndForwardKeepTheirRecordedBits recomputes recordedBits.
func TestSamplingAndForwardKeepTheirRecordedBits(t *testing.T) {
	if !strings.Contains(kernels.KernelName(), "assembly") {
		t.Skipf("the bits were recorded with the amd64 assembly kernels; these are %s", kernels.KernelName())
	}
	ms := sampleModels(t)
	opts := map[string]SamplerOptions{"default": {}, "bf16": {BF16: true}, "exact": {Exact: true}, "maxbatch5": {MaxBatch: 5}, "kvbf16": {KVBF16: true}}
	for name, m := range ms {
		for on, o := range opts {
			s := NewSampler(m, o)
			h := fnv.New64a()
			for range 2 {
				out, err := s.Generate(context.Background(), mixedRequests(m.d.V))
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range out {
					for i, tk := range c.Tokens {
						binary.Write(h, binary.LittleEndian, tk)
						binary.Write(h, binary.LittleEndian, math.Float32bits(c.LogProbs[i]))
					}
					binary.Write(h, binary.LittleEndian, math.Float32bits(c.Entropy))
				}
			}
			checkBits(t, name+"/"+on, h.Sum64())
		}
		rng := rand.New(rand.NewPCG(7, 7))
		lg, err := m.Logits(randPrompt(rng, 40, m.d.V))
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		for _, v := range lg {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
		var seqs []Sequence
		for i := 0; i < 4; i++ {
			tk := randPrompt(rng, 20+i, m.d.V)
			mk := make([]float32, len(tk))
			for j := range mk {
				mk[j] = 1
			}
			seqs = append(seqs, Sequence{Tokens: tk, Mask: mk})
		}
		l, err := m.Loss(seqs)
		if err != nil {
			t.Fatal(err)
		}
		binary.Write(h, binary.LittleEndian, math.Float64bits(l))
		checkBits(t, name+"/forward", h.Sum64())
	}
}

func checkBits(t *testing.T, key string, got uint64) {
	t.Helper()
	want, ok := recordedBits[key]
	if !ok || got != want {
		t.Errorf("%s: hash %#x, recorded %#x", key, got, want)
	}
}
