package pretrain

import (
	"math/rand/v2"
	"testing"

	"whale/harnesses"
)

// Every drawn variant meets its fragments' REQUIRES, and a near variant
// changes one to three knobs of h0 besides those its REQUIRES force.
func TestVariantsMeetRequires(t *testing.T) {
	for _, dom := range []string{"math", "searchqa", "chess"} {
		h0, err := harnesses.Builtin(dom, "h0")
		if err != nil {
			t.Fatal(err)
		}
		v, err := newVariantSource(h0)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(7, 1))
		for _, near := range []float64{0, 1} {
			mix := DefaultMix()
			mix.NearShare = near
			changedMax := 0
			for i := 0; i < 60; i++ {
				src, err := v.random(rng, mix)
				if err != nil {
					t.Fatalf("%s: %v", dom, err)
				}
				space, err := harnesses.SpaceOf(src)
				if err != nil {
					t.Fatal(err)
				}
				point := map[string]string{}
				changed, forced := 0, map[string]bool{}
				for _, d := range space {
					point[d.Knob] = d.Current
				}
				for _, d := range space {
					if d.Current != v.h0[d.Knob] {
						changed++
					}
					fr, ok := harnesses.FragmentFor(v.frags, d.Knob, d.Current)
					if !ok {
						continue
					}
					for _, r := range fr.Requires {
						if !r.Satisfied(point[r.Knob]) {
							t.Fatalf("%s variant %d: %s = %s needs %s, has %s", dom, i, d.Knob, d.Current, r, point[r.Knob])
						}
						if point[r.Knob] != v.h0[r.Knob] {
							forced[r.Knob] = true
						}
					}
				}
				if near == 1 && (changed-len(forced) > 3 || changed == 0) {
					t.Fatalf("%s near variant %d changes %d knobs (%d forced by REQUIRES)", dom, i, changed, len(forced))
				}
				changedMax = max(changedMax, changed)
			}
			if near == 0 && changedMax < 5 {
				t.Errorf("%s: far variants change at most %d knobs; want some far from h0", dom, changedMax)
			}
		}
	}
}
