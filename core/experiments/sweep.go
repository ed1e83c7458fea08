package experiments

import (
	"fmt"
	"math"

	"whale/core/experiments/report"
)

// Gap is the sweep's answer for one domain: how far harness-only search
// is ahead of (positive) or behind (negative) weight-only training at the
// same small budget.
type Gap struct {
	Domain      string     `json:"domain"`
	WeightOnly  float64    `json:"weight_only"`  // mean best test mean@8 over seeds
	HarnessOnly float64    `json:"harness_only"` // mean best test mean@8 over seeds
	Seeds       int        `json:"seeds"`
	Gap         float64    `json:"gap"` // HarnessOnly − WeightOnly (fractions)
	CI95        [2]float64 `json:"ci95"`
	// Side is "harness" or "weights" when one lever leads by ≥ 2 points
	// and the interval excludes 0, "balanced" when the whole interval lies
	// within ±2 points, and "unclear" otherwise: a small gap with a wide
	// interval may hide a large one.
	Side   string `json:"side"`
	Advice string `json:"advice"`
}

// balancedBand is the gap, in points, under which neither lever is the
// bottleneck.
const balancedBand = 2.0

// SweepConditions are the two one-sided conditions of the pre-check.
var SweepConditions = []string{"weight-only", "harness-only"}

// Sweep computes the gap from finished weight-only and harness-only runs
// of one domain. With several seeds per side the interval uses the
// spread over seeds (t quantile); with one, the runs' own bootstrap
// intervals over test tasks, added in quadrature.
func Sweep(domain string, runs []report.Run) (Gap, error) {
	side := map[string][]report.Run{}
	for _, r := range runs {
		if r.Domain == domain && r.Done {
			side[r.Condition] = append(side[r.Condition], r)
		}
	}
	w, h := side["weight-only"], side["harness-only"]
	if len(w) == 0 || len(h) == 0 {
		return Gap{}, fmt.Errorf("experiments: sweep of %s needs a finished weight-only and harness-only run (have %d and %d)", domain, len(w), len(h))
	}
	mw, hw := meanHalf(w)
	mh, hh := meanHalf(h)
	g := Gap{Domain: domain, WeightOnly: mw, HarnessOnly: mh, Seeds: min(len(w), len(h)), Gap: mh - mw}
	half := math.Hypot(hw, hh)
	g.CI95 = [2]float64{g.Gap - half, g.Gap + half}
	pts := 100 * g.Gap
	lo, hi := 100*g.CI95[0], 100*g.CI95[1]
	switch {
	case -balancedBand < lo && hi < balancedBand:
		g.Side = "balanced"
		g.Advice = fmt.Sprintf("The two levers are within %.0f points (%+.1f, interval [%+.1f, %+.1f]): the bottleneck is not one-sided, and alternation may not pay over the simpler one. Alternate only if a longer sweep separates them.", balancedBand, pts, lo, hi)
	case pts >= balancedBand && lo > 0:
		g.Side = "harness"
		g.Advice = fmt.Sprintf("Harness search leads by %.1f points: the scaffold is the bottleneck here. Start WHALE (or plain harness search) and expect harness phases to pay first; weight phases pay once the harness stops improving.", pts)
	case pts <= -balancedBand && hi < 0:
		g.Side = "weights"
		g.Advice = fmt.Sprintf("Weight training leads by %.1f points: the weights are the bottleneck here. Early harness search is mostly wasted; WHALE's harness phases should pay only after weight phases (watch the per-cycle attribution).", -pts)
	default:
		g.Side = "unclear"
		g.Advice = fmt.Sprintf("The gap is %+.1f points but its interval [%+.1f, %+.1f] is too wide to place it against the ±%.0f-point band: run more seeds or a larger budget before deciding.", pts, lo, hi, balancedBand)
	}
	return g, nil
}

// meanHalf is the mean of the runs' best test mean@8 and the half-width
// of its 95 % interval: over seeds, or with one seed that run's own.
func meanHalf(rs []report.Run) (mean, half float64) {
	if len(rs) == 1 {
		return rs[0].BestTestMean8, (rs[0].TestCI95[1] - rs[0].TestCI95[0]) / 2
	}
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = r.BestTestMean8
	}
	mean, lo, _ := report.MeanCI(xs)
	return mean, mean - lo
}
