package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Cell is the aggregate RESULTS.md shows for one condition × domain.
type Cell struct {
	Condition     string     `json:"condition"`
	Domain        string     `json:"domain"`
	N             int        `json:"n"`              // finished seeds
	Mean          float64    `json:"mean"`           // mean over seeds of BestTestMean8
	CI95          [2]float64 `json:"ci95"`           // over seeds: mean ± t(0.975, N-1)·sd/√N (N = 1: the run's own TestCI95)
	ReachRollouts int        `json:"reach_rollouts"` // median over seeds of the first boundary's Rollouts at which the run's test curve (val if no test) reaches the weight-only peak of the same domain & seed; -1 if never reached
	Phases        float64    `json:"phases"`         // mean phases

	// Seeds is how many distinct seeds the domain has over all conditions:
	// the number of runs this cell should have had.
	Seeds int `json:"seeds"`
	// Runs counts this cell's runs, finished or not.
	Runs int `json:"runs"`
	// Unfinished and Missing name the seeds that are not in N: started but
	// not done, and never started (a seed other conditions of the domain
	// have).
	Unfinished []uint64 `json:"unfinished,omitempty"`
	Missing    []uint64 `json:"missing,omitempty"`
	// ReachSeeds is how many finished seeds had a finished weight-only run of
	// the same seed to compare with; ReachRollouts means nothing when it is 0.
	ReachSeeds int `json:"reach_seeds"`
	// MeanRollouts is the mean budgeted rollouts the finished runs used:
	// MeanTrain training calls plus MeanSearch search calls.
	MeanRollouts float64 `json:"mean_rollouts"`
	MeanTrain    float64 `json:"mean_train_calls"`
	MeanSearch   float64 `json:"mean_search_calls"`
	// MeanTestCalls is the mean test-time model calls per test episode of
	// the finished runs' best checkpoints (0: not measured).
	MeanTestCalls float64 `json:"mean_test_calls_per_episode"`
	// MeanCompute is the mean compute time of the finished runs that have
	// one recorded (ComputeRuns of them; 0 runs: unknown).
	MeanCompute time.Duration `json:"mean_compute_ns"`
	ComputeRuns int           `json:"compute_runs"`
}

// Table computes the per condition × domain aggregates RESULTS.md shows: one
// cell per domain (sorted) and condition (in Conditions order), also for a
// condition with no runs, so a missing condition is visible rather than
// silently dropped. With N == 0 the means are zero and say nothing. Runs
// with an unknown condition are ignored here; Write rejects them.
func Table(runs []Run) []Cell {
	runs = sortedRuns(knownRuns(runs))
	var cells []Cell
	for _, d := range domains(runs) {
		var seeds []uint64
		for _, r := range runs {
			if r.Domain == d && !slices.Contains(seeds, r.Seed) {
				seeds = append(seeds, r.Seed)
			}
		}
		slices.Sort(seeds)
		for _, c := range Conditions {
			cells = append(cells, cell(runs, d, c, seeds))
		}
	}
	return cells
}

// AccountingTable is Table over one accounting's runs.
type AccountingTable struct {
	Accounting string
	Cells      []Cell
}

// TablesByAccounting is Table for each accounting the runs hold, in
// Accountings order: a run that stands in both accountings is a row of
// each, so one Table over all of them would count its seed twice.
func TablesByAccounting(runs []Run) []AccountingTable {
	var out []AccountingTable
	for _, a := range accountings(runs) {
		out = append(out, AccountingTable{Accounting: a, Cells: Table(ofAccounting(runs, a))})
	}
	return out
}

func knownRuns(runs []Run) []Run {
	var out []Run
	for _, r := range runs {
		if conditionIndex(r.Condition) >= 0 {
			out = append(out, r)
		}
	}
	return out
}

func cell(runs []Run, domain, cond string, seeds []uint64) Cell {
	c := Cell{Condition: cond, Domain: domain, Seeds: len(seeds), ReachRollouts: -1}
	var best []float64
	var reach []int // -1 is "never", sorted after every real count
	present := map[uint64]bool{}
	for _, r := range runs {
		if r.Domain != domain || r.Condition != cond {
			continue
		}
		c.Runs++
		present[r.Seed] = true
		if !r.Done {
			c.Unfinished = append(c.Unfinished, r.Seed)
			continue
		}
		c.N++
		best = append(best, r.BestTestMean8)
		c.Phases += float64(r.Phases)
		c.MeanRollouts += float64(r.Rollouts)
		c.MeanTrain += float64(r.TrainCalls)
		c.MeanSearch += float64(r.SearchCalls)
		c.MeanTestCalls += r.TestCallsPerEpisode
		if r.Compute > 0 {
			c.ComputeRuns++
			c.MeanCompute += r.Compute
		}
		if c.N == 1 {
			c.CI95 = r.TestCI95
		}
		if wo, ok := findRun(runs, WeightOnly, domain, r.Seed); ok && wo.Done {
			c.ReachSeeds++
			reach = append(reach, reachRollouts(r, wo))
		}
	}
	for _, s := range seeds {
		if !present[s] {
			c.Missing = append(c.Missing, s)
		}
	}
	if c.N == 0 {
		return c
	}
	c.Phases /= float64(c.N)
	c.MeanRollouts /= float64(c.N)
	c.MeanTrain /= float64(c.N)
	c.MeanSearch /= float64(c.N)
	c.MeanTestCalls /= float64(c.N)
	if c.ComputeRuns > 0 {
		c.MeanCompute /= time.Duration(c.ComputeRuns)
	}
	var lo, hi float64
	c.Mean, lo, hi = MeanCI(best)
	if c.N > 1 {
		c.CI95 = [2]float64{lo, hi}
	}
	c.ReachRollouts = medianReach(reach)
	return c
}

func findRun(runs []Run, cond, domain string, seed uint64) (Run, bool) {
	for _, r := range runs {
		if r.Condition == cond && r.Domain == domain && r.Seed == seed {
			return r, true
		}
	}
	return Run{}, false
}

// medianReach is the median with "never" (-1) ranked above every count: if
// the middle seed never got there, neither did the median run. An even count
// averages the two middle values (rounded down) when both are real.
func medianReach(reach []int) int {
	if len(reach) == 0 {
		return -1
	}
	key := func(v int) int {
		if v < 0 {
			return math.MaxInt
		}
		return v
	}
	s := slices.Clone(reach)
	slices.SortFunc(s, func(a, b int) int { return cmpInt(key(a), key(b)) })
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	a, b := s[n/2-1], s[n/2]
	if a < 0 || b < 0 {
		return -1
	}
	return (a + b) / 2
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hasTest says whether any boundary of r carries a test score.
func hasTest(r Run) bool {
	for _, p := range r.Curve {
		if p.HasTest {
			return true
		}
	}
	return false
}

// xy is one boundary of a curve: rollouts and a fraction.
type xy struct {
	x int
	y float64
}

// series is r's curve on test (only the boundaries that have it) or on val.
func series(r Run, test bool) []xy {
	var out []xy
	for _, p := range r.Curve {
		switch {
		case !test:
			out = append(out, xy{p.Rollouts, p.Val})
		case p.HasTest:
			out = append(out, xy{p.Rollouts, p.Test})
		}
	}
	return out
}

// reachTolerance absorbs float noise when comparing a score with a peak
// computed from the same kind of numbers.
const reachTolerance = 1e-9

// reachRollouts is the first boundary at which r's curve reaches the peak of
// the weight-only run wo (same domain and seed), or -1. Both curves are read
// on test when both have test scores, otherwise both on val, so a peak is
// never compared across splits.
func reachRollouts(r, wo Run) int {
	test := hasTest(r) && hasTest(wo)
	ref := series(wo, test)
	if len(ref) == 0 {
		return -1
	}
	peak := math.Inf(-1)
	for _, p := range ref {
		peak = max(peak, p.y)
	}
	for _, p := range series(r, test) {
		if p.y >= peak-reachTolerance {
			return p.x
		}
	}
	return -1
}

// ReachRollouts is the first boundary's Rollouts at which r's test curve
// (val if either run has no test points) reaches the peak of weightOnly, the
// weight-only run of the same domain and seed; -1 if it never does.
func ReachRollouts(r, weightOnly Run) int { return reachRollouts(r, weightOnly) }

// TQuantile975 is t(0.975, df), the two-sided 95% Student t quantile.
func TQuantile975(df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
}

// MeanCI is the mean of xs and its 95% t interval over the samples
// (mean ± t(0.975, n-1)·sd/√n); with one sample the interval is the point.
func MeanCI(xs []float64) (mean, lo, hi float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n == 1 {
		return mean, mean, mean
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	h := TQuantile975(n-1) * sd / math.Sqrt(float64(n))
	return mean, mean - h, mean + h
}

// Diff is condition A minus condition B on one domain, paired by seed.
type Diff struct {
	A      string     `json:"a"`
	B      string     `json:"b"`
	Domain string     `json:"domain"`
	N      int        `json:"n"`    // seeds where both runs finished
	Mean   float64    `json:"mean"` // mean over those seeds of A's minus B's BestTestMean8 (fraction)
	CI95   [2]float64 `json:"ci95"` // see TasksAndSeeds; only meaningful for N ≥ 2
	// TasksAndSeeds says CI95 is a percentile bootstrap over seeds and
	// test tasks together (every pair has per-task scores on the same
	// tasks): it carries the test set's own sampling error as well as the
	// seeds'. Otherwise CI95 is a t interval over the paired seeds.
	TasksAndSeeds bool `json:"tasks_and_seeds,omitempty"`
	// Same is true when the difference was the same on every paired seed
	// (N ≥ 2): the seeds then varied nothing that matters to it, the
	// interval has zero width, and it measures no noise at all.
	Same bool `json:"same_on_every_seed,omitempty"`
}

// sameTol is how far apart two paired differences may be and still be the
// same: scores are fractions of at most a few thousand rollouts, so real
// differences between seeds are ≥ 1e-4, and float rounding is ~1e-16.
const sameTol = 1e-9

// Verdict words a difference honestly: "beats" or "loses to" only when the
// CI over seeds excludes 0, "within noise of" otherwise, "cannot be
// compared with" below two paired seeds, where no CI over seeds exists, and
// "differs by the same amount on every seed from" (or "is identical on
// every seed to") when the seeds did not vary the difference: a zero-width
// interval there says the runs did not depend on the seed, not that the
// difference is certain.
func (d Diff) Verdict() string {
	switch {
	case d.N < 2:
		return "cannot be compared with"
	case d.TasksAndSeeds && d.CI95[0] > 0:
		return "beats"
	case d.TasksAndSeeds && d.CI95[1] < 0:
		return "loses to"
	case d.Same && d.Mean == 0:
		return "is identical on every seed to"
	case d.Same:
		return "differs by the same amount on every seed from"
	case d.CI95[0] > 0:
		return "beats"
	case d.CI95[1] < 0:
		return "loses to"
	}
	return "within noise of"
}

// Compare pairs the finished runs of conditions a and b on domain by seed and
// returns the difference a − b of their best test mean@8 with its CI.
func Compare(runs []Run, domain, a, b string) Diff {
	d := Diff{A: a, B: b, Domain: domain}
	var ds []float64
	var pairs [][2][]float64
	perTask := true
	for _, ra := range sortedRuns(runs) {
		if ra.Domain != domain || ra.Condition != a || !ra.Done {
			continue
		}
		rb, ok := findRun(runs, b, domain, ra.Seed)
		if !ok || !rb.Done {
			continue
		}
		ds = append(ds, ra.BestTestMean8-rb.BestTestMean8)
		pairs = append(pairs, [2][]float64{ra.TestPerTask, rb.TestPerTask})
		perTask = perTask && len(ra.TestPerTask) > 0 && len(ra.TestPerTask) == len(rb.TestPerTask)
	}
	d.N = len(ds)
	var lo, hi float64
	d.Mean, lo, hi = MeanCI(ds)
	d.CI95 = [2]float64{lo, hi}
	if perTask && d.N >= 2 {
		d.CI95, d.TasksAndSeeds = bootstrapTasksAndSeeds(pairs), true
		return d
	}
	d.Same = d.N >= 2 && slices.Max(ds)-slices.Min(ds) <= sameTol
	if d.Same && math.Abs(d.Mean) <= sameTol {
		d.Mean = 0
	}
	return d
}

// Attribution is WHALE's per-cycle bottleneck attribution for one run.
type Attribution struct {
	Round       int     `json:"round"`
	WeightGain  float64 `json:"weight_gain"`  // points (×100) gained in that round's weight phase (Test if HasTest, else Val; gain = after − before)
	HarnessGain float64 `json:"harness_gain"` // the same for the round's harness phase

	// Weights and Harness say whether the round had a phase of that kind
	// (a zero gain from a phase that ran is not the same as no phase).
	Weights bool `json:"weights"`
	Harness bool `json:"harness"`
	// WeightRollouts and HarnessRollouts are the budgeted rollouts the
	// round's phases of each kind spent.
	WeightRollouts  int `json:"weight_rollouts"`
	HarnessRollouts int `json:"harness_rollouts"`
}

// phaseGain is one phase of a run and what it changed, in points.
type phaseGain struct {
	round    int
	phase    string
	gain     float64
	rollouts int
}

// phaseGains lists r's phases in order. A gain is read on test when both
// boundaries have a test score, else on val, so it never mixes splits.
func phaseGains(r Run) []phaseGain {
	var out []phaseGain
	for j := 1; j < len(r.Curve); j++ {
		p, prev := r.Curve[j], r.Curve[j-1]
		if p.Phase != PhaseWeights && p.Phase != PhaseHarness {
			continue
		}
		g := p.Val - prev.Val
		if p.HasTest && prev.HasTest {
			g = p.Test - prev.Test
		}
		out = append(out, phaseGain{round: p.Round, phase: p.Phase, gain: 100 * g, rollouts: p.Rollouts - p.PhaseStart})
	}
	return out
}

// Attribute splits what r gained into its rounds' weight and harness phases,
// rounds in the order they ran; several phases of one kind in a round add up.
func Attribute(r Run) []Attribution {
	var out []Attribution
	idx := map[int]int{}
	for _, g := range phaseGains(r) {
		i, ok := idx[g.round]
		if !ok {
			i = len(out)
			idx[g.round] = i
			out = append(out, Attribution{Round: g.round})
		}
		a := &out[i]
		if g.phase == PhaseWeights {
			a.Weights = true
			a.WeightGain += g.gain
			a.WeightRollouts += g.rollouts
		} else {
			a.Harness = true
			a.HarnessGain += g.gain
			a.HarnessRollouts += g.rollouts
		}
	}
	return out
}

// BootstrapResamples is the number of resamples of the bootstrap over
// tasks and seeds.
const BootstrapResamples = 4000

// bootstrapTasksAndSeeds is a 95 % percentile interval of the mean paired
// difference A − B (each pair: one seed's per-task scores of A and of B on
// the same test tasks), resampling seeds with replacement and, within each
// drawn seed, test tasks with replacement (the same tasks for A and B, so
// the pairing by task is kept): the interval carries the seeds' variation
// and the test set's sampling error together. The resampling is seeded,
// so a report is the same every time it is written.
func bootstrapTasksAndSeeds(pairs [][2][]float64) [2]float64 {
	rng := rand.New(rand.NewPCG(35, 1))
	means := make([]float64, BootstrapResamples)
	for i := range means {
		total := 0.0
		for range pairs {
			p := pairs[rng.IntN(len(pairs))]
			n := len(p[0])
			sum := 0.0
			for range n {
				t := rng.IntN(n)
				sum += p[0][t] - p[1][t]
			}
			total += sum / float64(n)
		}
		means[i] = total / float64(len(pairs))
	}
	slices.Sort(means)
	lo := means[int(0.025*float64(len(means)))]
	hi := means[min(len(means)-1, int(0.975*float64(len(means))))]
	return [2]float64{lo, hi}
}
