package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// TestWeightPhaseHealth runs the tiny preset on the model's own chat
// policy (a random model, so the entropy is near log V) and checks the
// health figures against the events they summarise: each step's entropy
// is a real entropy (0 < H ≤ log V) and its kept fraction is Stats' kept
// over rollouts; each weight phase's record holds the mean of its steps'
// entropies and their pooled kept fraction, harness phases none; val
// pass@k is never below mean@k and each boundary's "before" is the previous
// one's "after"; the summary's entropy is the step-weighted mean.
func TestWeightPhaseHealth(t *testing.T) {
	db := openDB(t)
	env := testEnv(t, db)
	env.Policy = nil
	e, err := New(tinyConfig(t), env, "health")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	logV := math.Log(float64(testModel.VocabSize))
	type acc struct {
		steps          int
		ent            float64
		kept, rollouts int
	}
	var phase acc
	var all []acc
	for _, ev := range events(t, db, "health") {
		switch ev.Kind {
		case EvWeightStep:
			var d WeightStepData
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if !(d.Entropy > 0 && d.Entropy <= logV+1e-6) {
				t.Fatalf("step %d: entropy %v outside (0, log V = %v]", ev.Step, d.Entropy, logV)
			}
			if want := float64(d.Stats.Kept) / float64(d.Stats.Rollouts); d.KeptFraction != want {
				t.Fatalf("step %d: kept fraction %v, stats say %d/%d", ev.Step, d.KeptFraction, d.Stats.Kept, d.Stats.Rollouts)
			}
			phase.steps++
			phase.ent += d.Entropy
			phase.kept += d.Stats.Kept
			phase.rollouts += d.Stats.Rollouts
		case EvPhaseEnded:
			all = append(all, phase)
			phase = acc{}
		}
	}
	if len(all) != len(sum.Phases) {
		t.Fatalf("%d phase_ended events, %d phase records", len(all), len(sum.Phases))
	}
	weightSteps, entSum := 0, 0.0
	for i, p := range sum.Phases {
		a := all[i]
		if p.ValPassAfter < p.ValAfter || p.ValPassBefore < p.ValBefore {
			t.Fatalf("phase %d: val pass@k below mean@k: %+v", i, p)
		}
		if i > 0 && (p.ValPassBefore != sum.Phases[i-1].ValPassAfter || p.ValBefore != sum.Phases[i-1].ValAfter) {
			t.Fatalf("phase %d starts from val %v/%v, the previous ended at %v/%v", i, p.ValBefore, p.ValPassBefore, sum.Phases[i-1].ValAfter, sum.Phases[i-1].ValPassAfter)
		}
		if a.steps == 0 {
			if p.Entropy != nil || p.KeptFraction != nil {
				t.Fatalf("phase %d (%s, no steps) reports health %v %v", i, p.Kind, p.Entropy, p.KeptFraction)
			}
			continue
		}
		if p.Kind != PhaseWeights || p.Entropy == nil || p.KeptFraction == nil {
			t.Fatalf("phase %d (%s) with %d steps: health %v %v", i, p.Kind, a.steps, p.Entropy, p.KeptFraction)
		}
		if want := a.ent / float64(a.steps); math.Abs(*p.Entropy-want) > 1e-12 {
			t.Fatalf("phase %d: entropy %v, mean of its steps %v", i, *p.Entropy, want)
		}
		if want := float64(a.kept) / float64(a.rollouts); *p.KeptFraction != want {
			t.Fatalf("phase %d: kept fraction %v, its steps %d/%d", i, *p.KeptFraction, a.kept, a.rollouts)
		}
		weightSteps += a.steps
		entSum += a.ent
	}
	if weightSteps == 0 || sum.Entropy == nil {
		t.Fatalf("no weight steps (%d) or no run entropy (%v)", weightSteps, sum.Entropy)
	}
	if want := entSum / float64(weightSteps); math.Abs(*sum.Entropy-want) > 1e-12 {
		t.Fatalf("run entropy %v, mean over its %d steps %v", *sum.Entropy, weightSteps, want)
	}
}

// TestSampleBF16RunsAreDeterministicAndSampleDifferently runs the tiny
// preset on the model's own policy three times: twice sampling from
// bfloat16 weights (the same run, event for event) and once from float32
// (another run: its steps' entropies, computed from the sampler's logits,
// differ).
func TestSampleBF16RunsAreDeterministicAndSampleDifferently(t *testing.T) {
	entropies := func(bf16 bool) ([]float64, Summary) {
		db := openDB(t)
		env := testEnv(t, db)
		env.Policy = nil
		cfg := tinyConfig(t)
		cfg.SampleBF16 = bf16
		sum, _ := runIn(t, cfg, env, "bf16")
		var hs []float64
		for _, ev := range events(t, db, "bf16") {
			if ev.Kind == EvWeightStep {
				var d WeightStepData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				hs = append(hs, d.Entropy)
			}
		}
		if len(hs) == 0 {
			t.Fatal("no weight steps")
		}
		return hs, sum
	}
	a, sa := entropies(true)
	b, sb := entropies(true)
	if !slices.Equal(a, b) || !bytes.Equal(mustJSON(sa), mustJSON(sb)) {
		t.Fatalf("two bfloat16 runs differ: entropies %v and %v", a, b)
	}
	if f, _ := entropies(false); slices.Equal(a, f) {
		t.Fatalf("bfloat16 and float32 sampling gave the same entropies %v: the option changed nothing", a)
	}
}
