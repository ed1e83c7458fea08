package engine

import (
	"math"
	"runtime/debug"
	"testing"
)

// Each running engine adds its share to the process's soft memory limit
// and takes it back when it returns; the limit the process had comes back
// once none runs, and a person's GOMEMLIMIT is left alone.
func TestRunningEnginesHoldTheirMemoryShares(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	limit := func() int64 { return debug.SetMemoryLimit(-1) }

	a := holdMemoryLimit(100 << 20)
	if got := limit(); got != 100<<20 {
		t.Fatalf("one engine: limit %d, want %d", got, 100<<20)
	}
	b := holdMemoryLimit(50 << 20)
	if got := limit(); got != 150<<20 {
		t.Fatalf("two engines: limit %d, want %d", got, 150<<20)
	}
	a()
	a() // a second release changes nothing
	if got := limit(); got != 50<<20 {
		t.Fatalf("after the first returned: limit %d, want %d", got, 50<<20)
	}
	b()
	if got := limit(); got != before {
		t.Fatalf("none running: limit %d, want the process's %d", got, before)
	}

	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetMemoryLimit(math.MaxInt64)
	c := holdMemoryLimit(100 << 20)
	if got := limit(); got != math.MaxInt64 {
		t.Fatalf("under GOMEMLIMIT the engine set the limit to %d", got)
	}
	c()
}

func TestMemoryLimitIsThePresetsPlusTheModels(t *testing.T) {
	cfg := tinyConfig(t)
	if got := MemoryLimit(cfg); got != 0 {
		t.Fatalf("without a model: %d, want 0", got)
	}
	mc := testModel
	cfg.Model = &mc
	want := presetMemory["tiny"] + modelCopies*4*int64(mc.NumParams()) +
		SampleWidth*int64(promptAllowance+cfg.MaxNewTokens)*int64(2*mc.NumHiddenLayers*mc.NumKeyValueHeads*mc.Dim())*4
	if got := MemoryLimit(cfg); got != want {
		t.Fatalf("tiny: %d, want %d", got, want)
	}
	cfg.Preset = "custom"
	if got := MemoryLimit(cfg); got != 0 {
		t.Fatalf("an unknown preset: %d, want 0 (no limit)", got)
	}
}
