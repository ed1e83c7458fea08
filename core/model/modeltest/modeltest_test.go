package modeltest

import (
	"testing"

	"whale/core/model"
	"whale/kernels"
)

// TestNewIsSeededAndFresh: the same seed gives the same weights, another
// seed other weights, and a changed Config() copy changes no later call.
func TestNewIsSeededAndFresh(t *testing.T) {
	c := Config()
	if err := c.Validate(); err != nil {
		t.Fatalf("Config() is not a valid model: %v", err)
	}
	c.VocabSize = 1
	if Config().VocabSize != 264 {
		t.Fatal("changing a Config() copy changed the next one")
	}
	a, b, other := New(t, 5), New(t, 5), New(t, 6)
	wa, _ := a.ReadParam("model.embed_tokens.weight")
	wb, _ := b.ReadParam("model.embed_tokens.weight")
	wo, _ := other.ReadParam("model.embed_tokens.weight")
	if len(wa) != 264*16 {
		t.Fatalf("embedding has %d values, want %d", len(wa), 264*16)
	}
	same, differ := true, false
	for i := range wa {
		same = same && wa[i] == wb[i]
		differ = differ || wa[i] != wo[i]
	}
	if !same || !differ {
		t.Errorf("seed 5 twice same=%v, seeds 5 and 6 differ=%v; want true, true", same, differ)
	}
	// New is model.New on the CPU backend, nothing else.
	m, err := model.New(Config(), kernels.NewCPU(), 5)
	if err != nil {
		t.Fatal(err)
	}
	wm, _ := m.ReadParam("model.embed_tokens.weight")
	for i := range wa {
		if wa[i] != wm[i] {
			t.Fatalf("New(t, 5) differs from model.New(Config(), CPU, 5) at %d", i)
		}
	}
}
