package search

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"whale/harnesses"
)

// Fragment is the default proposer: it needs no LLM and never runs dry.
// Its zero value is ready to use.
//
// What to change is drawn, one (knob, choice) at a time, with weight
//
//	target(choice) × exp(θ / Temperature)
//
// where target rises with the incumbent's share of the failure kinds the
// choice's FRAGMENTS entry targets (Entry.Failures), and θ is a Thompson
// draw from a normal posterior over the paired gains (Entry.Gain, HasGain)
// of every archived candidate whose Mechanism set that choice. A choice's
// REQUIRES are applied with it, so one candidate may change several
// knobs. Besides these one-choice steps it proposes jumps across 2–3
// knobs and crossovers between Pareto-front parents; a ranged knob moves
// to a nearby value of its range. When the incumbent's neighbourhood is
// scored it widens: more jumps, crossovers, then random restarts within
// the space, and at last a walk over the whole space, so it returns fewer
// than n candidates only when every point of the space is known. Frozen
// knobs keep the incumbent's value; pruned and already scored harnesses
// are never proposed. Given the rng, it is deterministic.
type Fragment struct {
	// Parents bounds the Pareto front crossover draws from; 0 means 8.
	Parents int
	// PriorSD is the prior standard deviation of a choice's paired gain
	// (a fraction: 0.05 is 5 points); 0 means 0.05.
	PriorSD float64
	// Temperature says how far a sampled gain tilts the draw: a choice
	// whose draw is Temperature better weighs e times more; 0 means 0.02.
	Temperature float64
}

// Name is "fragment".
func (Fragment) Name() string { return "fragment" }

// Weights of the draw. A choice without a FRAGMENTS entry (or with no
// failure data to weigh it by) has baseWeight; each target adds
// targetWeight times the incumbent's share of that failure kind.
const (
	baseWeight   = 0.25
	targetWeight = 3.0
	// stepTries bounds the attempts for one candidate before the walk
	// over the whole space.
	stepTries = 96
	// walkLimit bounds that walk (a space larger than this has unscored
	// points that random restarts find long before).
	walkLimit = 200_000
)

// move is one (knob, choice) the proposer may make, with its weight.
type move struct {
	knob, choice string
	weight       float64
}

// proposal is the per-call state of Propose.
type proposal struct {
	f       Fragment
	a       *Archive
	rng     *rand.Rand
	inc     *Entry
	vars    *harnesses.Variants
	dims    map[string]harnesses.Dimension
	knobs   []string // unfrozen knobs, sorted
	current map[string]string
	frags   []harnesses.Fragment
	shares  map[string]float64
	gains   map[string][]gainObs
	seen    map[string]bool
}

type gainObs struct{ gain, se float64 }

func (f Fragment) defaults() Fragment {
	if f.Parents <= 0 {
		f.Parents = 8
	}
	if f.PriorSD <= 0 {
		f.PriorSD = 0.05
	}
	if f.Temperature <= 0 {
		f.Temperature = 0.02
	}
	return f
}

// Propose returns up to n new candidates around the incumbent.
func (f Fragment) Propose(ctx context.Context, a *Archive, rng *rand.Rand, n int) ([]Candidate, error) {
	return f.ProposeWhere(ctx, a, rng, n, nil)
}

// ProposeWhere is Propose passing over the candidates keep refuses (nil
// keeps all): they count as seen, so the draws go on to other points.
func (f Fragment) ProposeWhere(ctx context.Context, a *Archive, rng *rand.Rand, n int, keep func(Candidate) bool) ([]Candidate, error) {
	p, err := newProposal(f.defaults(), a, rng)
	if err != nil {
		return nil, err
	}
	var out []Candidate
	stepDone := false
	for passed := 0; len(out) < n && passed < maxPassedOver; {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		c, ok, err := p.next(&stepDone)
		if err != nil {
			return out, err
		}
		if !ok {
			break // every point of the space is known
		}
		if keep != nil && !keep(c) {
			passed++
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func newProposal(f Fragment, a *Archive, rng *rand.Rand) (*proposal, error) {
	inc, ok := a.Entries[a.Incumbent]
	if !ok {
		return nil, fmt.Errorf("search: fragment: the incumbent %s is not in the archive", short(a.Incumbent))
	}
	vars, err := harnesses.NewVariants(inc.Source)
	if err != nil {
		return nil, fmt.Errorf("search: fragment: incumbent %s: %w", short(inc.Hash), err)
	}
	frags, err := harnesses.FragmentsOf(inc.Source)
	if err != nil {
		return nil, fmt.Errorf("search: fragment: incumbent %s: %w", short(inc.Hash), err)
	}
	p := &proposal{f: f, a: a, rng: rng, inc: inc, vars: vars, frags: frags,
		dims: map[string]harnesses.Dimension{}, current: map[string]string{}, seen: map[string]bool{inc.Hash: true}}
	for _, d := range vars.Space() {
		p.dims[d.Knob] = d
		p.current[d.Knob] = d.Current
		if !a.Frozen[d.Knob] && len(d.Choices) > 1 {
			p.knobs = append(p.knobs, d.Knob)
		}
	}
	sort.Strings(p.knobs)
	p.shares = failureShares(inc.Failures)
	p.gains = choiceGains(a)
	return p, nil
}

// failureShares is each failure kind's share of the failed rollouts; nil
// when there are none to weigh by.
func failureShares(fails map[string]int) map[string]float64 {
	total := 0
	for k, c := range fails {
		if k != "" && c > 0 {
			total += c
		}
	}
	if total == 0 {
		return nil
	}
	out := map[string]float64{}
	for k, c := range fails {
		if k != "" && c > 0 {
			out[k] = float64(c) / float64(total)
		}
	}
	return out
}

// ParseMechanism splits a mechanism "k1=c1,k2=c2" into its knob settings.
// A comma inside a choice stays with it: a new setting starts only where
// an identifier and "=" follow the comma.
func ParseMechanism(m string) [][2]string {
	var out [][2]string
	for _, part := range strings.Split(m, ",") {
		k, c, ok := strings.Cut(part, "=")
		if ok && isIdent(strings.TrimSpace(k)) {
			out = append(out, [2]string{strings.TrimSpace(k), strings.TrimSpace(c)})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1][1] += "," + part
		}
	}
	return out
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// choiceGains collects, per "knob=choice", the paired gains of archived
// candidates whose mechanism set it (each with its standard error).
func choiceGains(a *Archive) map[string][]gainObs {
	out := map[string][]gainObs{}
	for _, h := range a.sortedHashes() {
		e := a.Entries[h]
		if !e.HasGain || e.Mechanism == "" {
			continue
		}
		se := math.Max((e.GainHi-e.GainLo)/(2*1.96), 0.005)
		for _, kc := range ParseMechanism(e.Mechanism) {
			key := kc[0] + "=" + kc[1]
			out[key] = append(out[key], gainObs{e.Gain, se})
		}
	}
	return out
}

// thompson draws a gain for a choice from the normal posterior of its
// observed paired gains (prior N(0, PriorSD²)).
func (p *proposal) thompson(knob, choice string) float64 {
	prec := 1 / (p.f.PriorSD * p.f.PriorSD)
	num := 0.0
	for _, g := range p.gains[knob+"="+choice] {
		w := 1 / (g.se * g.se)
		prec += w
		num += w * g.gain
	}
	return num/prec + p.rng.NormFloat64()/math.Sqrt(prec)
}

// targetWeight of a choice under the incumbent's failure shares.
func (p *proposal) target(knob, choice string) float64 {
	if p.shares == nil {
		return 1
	}
	w := baseWeight
	if fr, ok := harnesses.FragmentFor(p.frags, knob, choice); ok {
		for _, t := range fr.Targets {
			w += targetWeight * p.shares[t]
		}
	}
	return w
}

// moves lists the one-choice changes of the incumbent with fresh weights.
// A ranged knob offers its nearby values only (see nearby).
func (p *proposal) moves() []move {
	var out []move
	for _, k := range p.knobs {
		d := p.dims[k]
		choices := d.Choices
		if d.Range != nil {
			choices = nearby(d, p.current[k])
		}
		for _, c := range choices {
			if c == p.current[k] {
				continue
			}
			w := p.target(k, c) * math.Exp(p.thompson(k, c)/p.f.Temperature)
			out = append(out, move{k, c, w})
		}
	}
	return out
}

// nearby lists the values of a ranged knob within two steps of the
// current one, and its double and half, that lie in the range.
func nearby(d harnesses.Dimension, current string) []string {
	cur, err := strconv.Atoi(current)
	if err != nil || d.Range == nil {
		return d.Choices
	}
	r := *d.Range
	seen := map[int]bool{}
	var out []string
	for _, v := range []int{cur - 2*r.Step, cur - r.Step, cur + r.Step, cur + 2*r.Step, cur * 2, cur / 2} {
		if r.Contains(v) && v != cur && !seen[v] {
			seen[v] = true
			out = append(out, strconv.Itoa(v))
		}
	}
	sort.Slice(out, func(i, j int) bool { a, _ := strconv.Atoi(out[i]); b, _ := strconv.Atoi(out[j]); return a < b })
	return out
}

// draw picks an index with probability proportional to weight; -1 when
// every weight is zero.
func draw(rng *rand.Rand, ws []float64) int {
	total := 0.0
	for _, w := range ws {
		total += w
	}
	if total <= 0 || math.IsInf(total, 0) || math.IsNaN(total) {
		// Overflowed weights: take the largest.
		best := -1
		for i, w := range ws {
			if w > 0 && (best < 0 || w > ws[best]) {
				best = i
			}
		}
		return best
	}
	x := rng.Float64() * total
	for i, w := range ws {
		x -= w
		if x < 0 {
			return i
		}
	}
	return len(ws) - 1
}

// next produces one new candidate: one-choice steps while the incumbent's
// neighbourhood lasts (with some jumps and crossovers among them), then
// wider moves. ok is false when the whole space is known.
func (p *proposal) next(stepDone *bool) (Candidate, bool, error) {
	ms := p.moves()
	tried := map[int]bool{}
	parents := p.a.Pareto(p.f.Parents)
	for attempt := 0; attempt < stepTries; attempt++ {
		var point map[string]string
		parent := p.inc
		mode := p.mode(*stepDone, len(parents) >= 2)
		switch mode {
		case "step":
			ws := make([]float64, len(ms))
			for i, m := range ms {
				if !tried[i] {
					ws[i] = m.weight
				}
			}
			i := draw(p.rng, ws)
			if i < 0 {
				*stepDone = true
				continue
			}
			tried[i] = true
			point = p.with(map[string]string{ms[i].knob: ms[i].choice})
		case "crossover":
			i := p.rng.IntN(len(parents))
			j := p.rng.IntN(len(parents) - 1)
			if j >= i {
				j++
			}
			parent = parents[i]
			point = p.crossover(parents[i], parents[j])
		case "restart":
			point = p.restart()
		default:
			point = p.jump(ms, 2+p.rng.IntN(2))
		}
		if point == nil {
			continue
		}
		c, ok, err := p.candidate(parent, point)
		if err != nil {
			return Candidate{}, false, err
		}
		if ok {
			return c, true, nil
		}
		if mode == "step" && len(tried) == len(ms) {
			*stepDone = true
		}
	}
	return p.walk()
}

// mode picks the kind of move: mostly one-choice steps while the
// incumbent's neighbourhood lasts, then jumps, crossovers and restarts.
func (p *proposal) mode(stepDone, canCross bool) string {
	x := p.rng.Float64()
	if !stepDone {
		switch {
		case x < 0.7:
			return "step"
		case x < 0.8 && canCross:
			return "crossover"
		}
		return "jump"
	}
	switch {
	case x < 0.4:
		return "jump"
	case x < 0.6 && canCross:
		return "crossover"
	}
	return "restart"
}

// with returns the incumbent's point with the given changes and the
// requirements they bring; nil when they conflict.
func (p *proposal) with(changes map[string]string) map[string]string {
	point := map[string]string{}
	for k, v := range p.current {
		point[k] = v
	}
	fixed := map[string]bool{}
	for k, v := range changes {
		point[k] = v
		fixed[k] = true
	}
	if !p.satisfy(point, fixed) {
		return nil
	}
	return point
}

// satisfy applies the REQUIRES of every knob's value in point, changing
// knobs that are neither fixed nor frozen; false when a requirement
// cannot be met.
func (p *proposal) satisfy(point map[string]string, fixed map[string]bool) bool {
	for k := range p.a.Frozen {
		if p.a.Frozen[k] {
			fixed[k] = true
		}
	}
	return harnesses.SatisfyRequires(p.frags, point, fixed, p.pickFrom)
}

// pickFrom chooses a value a requirement allows: for numbers the one
// nearest the present value (ties: the smaller, the cheaper), else any.
func (p *proposal) pickFrom(r harnesses.Requirement, present string) string {
	if cur, err := strconv.Atoi(present); err == nil {
		best, bestD := "", math.MaxInt
		for _, c := range r.Choices {
			v, err := strconv.Atoi(c)
			if err != nil {
				best = ""
				break
			}
			if d := abs(v - cur); d < bestD {
				best, bestD = c, d
			}
		}
		if best != "" {
			return best
		}
	}
	return r.Choices[p.rng.IntN(len(r.Choices))]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// jump changes k distinct knobs at once, drawn by weight.
func (p *proposal) jump(ms []move, k int) map[string]string {
	changes := map[string]string{}
	ws := make([]float64, len(ms))
	for i, m := range ms {
		ws[i] = m.weight
	}
	for len(changes) < k {
		i := draw(p.rng, ws)
		if i < 0 {
			break
		}
		changes[ms[i].knob] = ms[i].choice
		for j := range ms {
			if ms[j].knob == ms[i].knob {
				ws[j] = 0
			}
		}
	}
	if len(changes) < 2 {
		return nil
	}
	return p.with(changes)
}

// crossover mixes two archived harnesses knob by knob; frozen knobs keep
// the incumbent's value.
func (p *proposal) crossover(x, y *Entry) map[string]string {
	sx, err1 := harnesses.SpaceOf(x.Source)
	sy, err2 := harnesses.SpaceOf(y.Source)
	if err1 != nil || err2 != nil {
		return nil
	}
	vy := map[string]string{}
	for _, d := range sy {
		vy[d.Knob] = d.Current
	}
	point := map[string]string{}
	for k, v := range p.current {
		point[k] = v
	}
	for _, d := range sx {
		if _, ok := p.dims[d.Knob]; !ok || p.a.Frozen[d.Knob] {
			continue
		}
		v := d.Current
		if w, ok := vy[d.Knob]; ok && w != v && p.rng.IntN(2) == 1 {
			v = w
		}
		if slices.Contains(p.dims[d.Knob].Choices, v) {
			point[d.Knob] = v
		}
	}
	if !p.satisfy(point, map[string]bool{}) {
		return nil
	}
	return point
}

// restart draws a random point of the space (frozen knobs kept).
func (p *proposal) restart() map[string]string {
	point := map[string]string{}
	for k, v := range p.current {
		point[k] = v
	}
	for _, k := range p.knobs {
		cs := p.dims[k].Choices
		point[k] = cs[p.rng.IntN(len(cs))]
	}
	if !p.satisfy(point, map[string]bool{}) {
		return nil
	}
	return point
}

// walk visits the whole space in mixed-radix order from a random start
// and returns the first unknown point: the last resort of a space whose
// every easy neighbour is known.
func (p *proposal) walk() (Candidate, bool, error) {
	radix := make([]int, len(p.knobs))
	size := 1
	for i, k := range p.knobs {
		radix[i] = len(p.dims[k].Choices)
		if size <= walkLimit {
			size *= radix[i]
		}
	}
	limit := min(size, walkLimit)
	start := p.rng.IntN(max(size, 1))
	for s := 0; s < limit; s++ {
		idx := (start + s) % max(size, 1)
		point := map[string]string{}
		for k, v := range p.current {
			point[k] = v
		}
		for i, k := range p.knobs {
			point[k] = p.dims[k].Choices[idx%radix[i]]
			idx /= radix[i]
		}
		fixed := map[string]bool{}
		for _, k := range p.knobs {
			fixed[k] = true
		}
		for k := range p.current {
			fixed[k] = true
		}
		if !p.satisfy(point, fixed) {
			continue
		}
		c, ok, err := p.candidate(p.inc, point)
		if err != nil || ok {
			return c, ok, err
		}
	}
	return Candidate{}, false, nil
}

// candidate renders a point; ok is false when it is known (pruned,
// scored, or proposed already in this call) or equals its parent.
func (p *proposal) candidate(parent *Entry, point map[string]string) (Candidate, bool, error) {
	src, err := p.vars.Render(point)
	if err != nil {
		return Candidate{}, false, fmt.Errorf("search: fragment: %w", err)
	}
	h := harnesses.Hash(src)
	if p.seen[h] || p.a.known(h) || h == parent.Hash {
		return Candidate{}, false, nil
	}
	p.seen[h] = true
	pv := map[string]string{}
	if parent == p.inc {
		pv = p.current
	} else if sp, err := harnesses.SpaceOf(parent.Source); err == nil {
		for _, d := range sp {
			pv[d.Knob] = d.Current
		}
	}
	var parts []string
	keys := make([]string, 0, len(point))
	for k := range point {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if point[k] != pv[k] {
			parts = append(parts, k+"="+point[k])
		}
	}
	return Candidate{Source: src, Hash: h, Parent: parent.Hash, Mechanism: strings.Join(parts, ","), Proposer: "fragment"}, true, nil
}
