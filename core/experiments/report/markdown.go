package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// baselines are the conditions WHALE is compared with, in report order.
var baselines = []string{"weight-only", "harness-only", "vote-only", "staged", "fast-slow"}

// Markdown renders RESULTS.md for runs (any order; they are sorted here).
// It assumes runs passed Validate.
func Markdown(runs []Run, meta Meta) []byte {
	runs = sortedRuns(runs)
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }

	p("# WHALE bench: conditions at equal rollout budget\n\n")
	p("Made by:\n\n```\n%s\n```\n\n", strings.TrimSpace(meta.Command))
	if meta.Preset != "" {
		p("- Preset: %s\n", meta.Preset)
	}
	if meta.TrainCalls > 0 || meta.SearchCalls > 0 {
		p("- Ledgers per run (paper accounting): %s training calls (the weight ledger: weight-only, staged, fast-slow and WHALE), %s search calls (the search ledger: harness-only, staged, fast-slow and WHALE); evaluation (val and test) spends neither\n",
			count(meta.TrainCalls), count(meta.SearchCalls))
		p("- Equal-total accounting: every condition %s model calls of training and search together\n", count(meta.TrainCalls+meta.SearchCalls))
	} else if meta.Budget > 0 {
		p("- Budget per run: %s model calls (training and harness scoring)\n", count(meta.Budget))
	}
	if meta.Seeds > 0 {
		p("- Seeds per condition: %d\n", meta.Seeds)
	}
	p("- Conditions: %s\n", strings.Join(Conditions, ", "))
	p("- Domains: %s\n", strings.Join(domains(runs), ", "))
	p("- Compute: %s\n", computeText(runs))
	if s := steeredText(runs); s != "" {
		p("- Steered: %s\n", s)
	}
	p("\n")
	for _, n := range meta.Notes {
		if n = strings.TrimSpace(n); n != "" {
			p("%s\n\n", n)
		}
	}
	p("How to read this: scores are best test mean@8 in points (percent correct over 8 samples per test task), " +
		"each taken from the run's best-val checkpoint. The 95%% CI is a t interval over seeds " +
		"(with one finished seed: that run's bootstrap CI over test tasks). " +
		"A condition \"beats\" another only when the 95%% CI of their paired difference excludes 0: where every run kept its per-task test scores " +
		"(all runs on the same test tasks), that interval is a percentile bootstrap over seeds and test tasks together " +
		"(seeds resampled, then within each seed the test tasks, the same tasks for both conditions), so it carries the test set's own sampling error; " +
		"otherwise it is a t interval over seeds; " +
		"otherwise the difference is called within noise; a difference that is the same on every seed is reported as such " +
		"(its interval has zero width because the seeds changed nothing, not because it is certain). " +
		"Unfinished runs are listed, never averaged.\n\n")

	accs := accountings(runs)
	for i, acc := range accs {
		sub := ofAccounting(runs, acc)
		if len(accs) > 1 || acc == AccountingPaper {
			p("# Accounting: %s\n\n%s\n\n", acc, accountingText(acc))
		}
		cells := Table(sub)
		for _, d := range domains(sub) {
			var dc []Cell
			for _, c := range cells {
				if c.Domain == d {
					dc = append(dc, c)
				}
			}
			writeDomain(&b, sub, dc, d, meta, i == 0)
		}
	}
	if h := strings.TrimSpace(meta.History); h != "" {
		p("%s\n", h)
	}
	return b.Bytes()
}

func writeDomain(b *bytes.Buffer, runs []Run, cells []Cell, domain string, meta Meta, chart bool) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("## %s (%s)\n\n", domain, accountingOf(runs[0]))
	if chart {
		p("![%s: score against the budget spent](%s)\n\n", domain, ChartFile(domain))
	}
	p("| condition | best test mean@8 | 95%% CI | seeds | model calls to weight-only peak | phases | model calls used: training + search = sum | test-time calls per test episode | compute per run |\n")
	p("|---|---:|---|---|---:|---:|---:|---:|---:|\n")
	for _, c := range cells {
		expect := max(c.Seeds, meta.Seeds)
		seeds := fmt.Sprintf("%d of %d", c.N, expect)
		if c.N < expect {
			seeds += " finished"
		}
		if c.N == 0 {
			p("| %s | — | — | %s | — | — | — | — | — |\n", c.Condition, seeds)
			continue
		}
		ci := fmt.Sprintf("%s – %s", points(c.CI95[0]), points(c.CI95[1]))
		if c.N == 1 {
			ci += " (test tasks, 1 seed)"
		}
		calls := count(int(math.Round(c.MeanRollouts)))
		if c.MeanTrain+c.MeanSearch > 0 {
			calls = fmt.Sprintf("%s + %s = %s", count(int(math.Round(c.MeanTrain))), count(int(math.Round(c.MeanSearch))), calls)
		}
		testCalls := "—"
		if c.MeanTestCalls > 0 {
			testCalls = fmt.Sprintf("%.2f", c.MeanTestCalls)
		}
		p("| %s | %s | %s | %s | %s | %.1f | %s | %s | %s |\n", c.Condition, points(c.Mean), ci, seeds,
			reachText(c), c.Phases, calls, testCalls, cellCompute(c))
	}
	p("\n")
	writeHealth(b, runs, domain)
	writeMissing(b, runs, cells, domain, meta)
	writeVerdict(b, runs, cells, domain)
	for _, w := range []string{WhaleFixed, WhaleAdaptive} {
		writeAttribution(b, runs, domain, w, meta)
	}
}

// computeText sums the runs' recorded compute time for the header, each
// run once (a run that stands in both accountings is two rows).
func computeText(runs []Run) string {
	var total time.Duration
	with, without := 0, 0
	seen := map[string]bool{}
	for _, r := range runs {
		if seen[r.RunID] {
			continue
		}
		seen[r.RunID] = true
		if r.Compute > 0 {
			total += r.Compute
			with++
		} else if r.Done {
			without++
		}
	}
	if with == 0 {
		return "not recorded (the store holds no compute time for these runs)"
	}
	s := fmt.Sprintf("%s summed over %s (the time each run's stored work took, over every process that ran it; runs that ran side by side overlap in wall time)",
		duration(total), plural(with, "run"))
	if without > 0 {
		s += fmt.Sprintf("; %s without a record (created before whale kept compute time)", plural(without, "finished run"))
	}
	return s
}

// cellCompute is a cell's mean compute time per finished run.
func cellCompute(c Cell) string {
	if c.ComputeRuns == 0 {
		return "—"
	}
	s := duration(c.MeanCompute)
	if c.ComputeRuns < c.N {
		s += fmt.Sprintf(" (%d of %d runs)", c.ComputeRuns, c.N)
	}
	return s
}

// duration formats compute time: "42 s", "7.3 min", "3 h 05 min".
func duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	m := int(d.Round(time.Minute).Minutes())
	return fmt.Sprintf("%d h %02d min", m/60, m%60)
}

func reachText(c Cell) string {
	switch {
	case c.ReachSeeds == 0:
		return "no weight-only run"
	case c.Condition == WeightOnly && c.ReachRollouts >= 0:
		return "n/a (own peak at " + count(c.ReachRollouts) + ")"
	case c.Condition == WeightOnly:
		return "n/a"
	case c.ReachRollouts < 0:
		return "—"
	}
	return count(c.ReachRollouts)
}

// writeMissing states plainly which runs are not in the averages and which
// runs spent more than the budget, so an unequal comparison is visible.
func writeMissing(b *bytes.Buffer, runs []Run, cells []Cell, domain string, meta Meta) {
	// A record holds finished runs only: a run it lacks may be under way.
	absent, unstored := " never started", " not in the store"
	if meta.FromRecord {
		absent, unstored = " not finished yet", " not in the record"
	}
	var lines []string
	for _, c := range cells {
		expect := max(c.Seeds, meta.Seeds)
		if c.N == expect {
			continue
		}
		var why []string
		if len(c.Unfinished) > 0 {
			why = append(why, seedList(c.Unfinished)+" unfinished")
		}
		if len(c.Missing) > 0 {
			why = append(why, seedList(c.Missing)+absent)
		}
		if unseen := expect - c.Runs - len(c.Missing); unseen > 0 {
			why = append(why, plural(unseen, "more seed")+unstored)
		}
		lines = append(lines, fmt.Sprintf("%s: %d of %d seeds finished (%s).", c.Condition, c.N, expect, strings.Join(why, "; ")))
	}
	if meta.Budget > 0 {
		for _, c := range cells {
			over, most, mostID := 0, 0, ""
			for _, r := range runs {
				if r.Domain == domain && r.Condition == c.Condition && r.Rollouts > meta.Budget {
					over++
					if r.Rollouts > most {
						most, mostID = r.Rollouts, r.RunID
					}
				}
			}
			if over > 0 {
				lines = append(lines, fmt.Sprintf("%s: %s over the budget of %s model calls (most: %s, run %s).",
					c.Condition, plural(over, "run"), count(meta.Budget), count(most), mostID))
			}
		}
	}
	if len(lines) == 0 {
		p := 0
		for _, c := range cells {
			p += c.N
		}
		fmt.Fprintf(b, "All %d runs finished within the budget.\n\n", p)
		return
	}
	b.WriteString("Missing, unfinished or over budget:\n\n")
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
	b.WriteString("\n")
}

func writeVerdict(b *bytes.Buffer, runs []Run, cells []Cell, domain string) {
	ranked := slices.Clone(cells)
	ranked = slices.DeleteFunc(ranked, func(c Cell) bool { return c.N == 0 })
	if len(ranked) == 0 {
		fmt.Fprintf(b, "No run finished on %s, so nothing can be said about it.\n\n", domain)
		return
	}
	slices.SortStableFunc(ranked, func(x, y Cell) int {
		switch {
		case x.Mean > y.Mean:
			return -1
		case x.Mean < y.Mean:
			return 1
		}
		return 0
	})
	best := ranked[0]
	s := fmt.Sprintf("On %s the best mean is %s at %s points (%s).", domain, best.Condition, points(best.Mean), plural(best.N, "seed"))
	if len(ranked) > 1 {
		next := ranked[1]
		d := Compare(runs, domain, best.Condition, next.Condition)
		switch d.Verdict() {
		case "beats":
			s += fmt.Sprintf(" It beats the runner-up, %s, by %s points (%s).", next.Condition, signed(d.Mean), diffCI(d))
		case "cannot be compared with":
			s += fmt.Sprintf(" Its lead over the runner-up, %s (%s points), rests on %s, too few for a CI over seeds.", next.Condition, signed(d.Mean), plural(d.N, "paired seed"))
		case "differs by the same amount on every seed from", "is identical on every seed to":
			s += fmt.Sprintf(" Its lead over the runner-up, %s, is %s points on each of %s: the seeds changed nothing, so there is no noise to judge it against.", next.Condition, signed(d.Mean), plural(d.N, "paired seed"))
		default:
			s += fmt.Sprintf(" Its lead over the runner-up, %s, is within noise (%s points, %s).", next.Condition, signed(d.Mean), diffCI(d))
		}
	}
	b.WriteString(s + "\n\n")
	for _, w := range []string{WhaleFixed, WhaleAdaptive} {
		if cellOf(cells, w).N == 0 {
			fmt.Fprintf(b, "%s has no finished run on %s, so it is compared with nothing.\n\n", w, domain)
			continue
		}
		var parts []string
		for _, base := range baselines {
			if cellOf(cells, base).N == 0 {
				parts = append(parts, fmt.Sprintf("has no finished %s run to compare with", base))
				continue
			}
			d := Compare(runs, domain, w, base)
			switch v := d.Verdict(); v {
			case "cannot be compared with":
				parts = append(parts, fmt.Sprintf("cannot be compared with %s (%s, difference %s points)", base, plural(d.N, "paired seed"), signed(d.Mean)))
			case "within noise of":
				parts = append(parts, fmt.Sprintf("is within noise of %s (%s points, %s)", base, signed(d.Mean), diffCI(d)))
			case "differs by the same amount on every seed from", "is identical on every seed to":
				parts = append(parts, fmt.Sprintf("%s %s (%s points on each of %s: no noise to judge it against)", v, base, signed(d.Mean), plural(d.N, "paired seed")))
			default:
				parts = append(parts, fmt.Sprintf("%s %s (%s points, %s)", v, base, signed(d.Mean), diffCI(d)))
			}
		}
		fmt.Fprintf(b, "%s %s.\n\n", w, joinAnd(parts))
	}
}

func cellOf(cells []Cell, cond string) Cell {
	for _, c := range cells {
		if c.Condition == cond {
			return c
		}
	}
	return Cell{Condition: cond}
}

func diffCI(d Diff) string {
	return fmt.Sprintf("95%% CI %s to %s over %s", signed(d.CI95[0]), signed(d.CI95[1]), plural(d.N, "paired seed"))
}

// writeAttribution shows, for one WHALE condition, what each round's weight
// and harness phases gained (mean over seeds), and reads the bottleneck off
// those gains next to harness-only's first phase on the base weights.
func writeAttribution(b *bytes.Buffer, runs []Run, domain, whale string, meta Meta) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	var fin []Run
	for _, r := range runs {
		if r.Domain == domain && r.Condition == whale && r.Done {
			fin = append(fin, r)
		}
	}
	p("### %s on %s: where the points came from\n\n", whale, domain)
	if len(fin) == 0 {
		p("No finished %s run.\n\n", whale)
		return
	}
	type acc struct {
		w, h   float64 // summed gains, points
		nw, nh int     // seeds that ran a phase of that kind in the round
		rw, rh int     // summed rollouts of those phases
	}
	rounds := map[int]*acc{}
	var order []int
	var totalW, totalH float64
	var before, after []float64 // harness phase gains before / after the run's first weight phase
	for _, r := range fin {
		for _, a := range Attribute(r) {
			ac, ok := rounds[a.Round]
			if !ok {
				ac = &acc{}
				rounds[a.Round] = ac
				order = append(order, a.Round)
			}
			if a.Weights {
				ac.w += a.WeightGain
				ac.nw++
				ac.rw += a.WeightRollouts
				totalW += a.WeightGain
			}
			if a.Harness {
				ac.h += a.HarnessGain
				ac.nh++
				ac.rh += a.HarnessRollouts
				totalH += a.HarnessGain
			}
		}
		weighted := false
		for _, g := range phaseGains(r) {
			switch {
			case g.phase == PhaseWeights:
				weighted = true
			case weighted:
				after = append(after, g.gain)
			default:
				before = append(before, g.gain)
			}
		}
	}
	slices.Sort(order)
	p("| round | weight-phase gain | harness-phase gain | weight-phase model calls | harness-phase model calls |\n|---:|---:|---:|---:|---:|\n")
	for _, rd := range order {
		ac := rounds[rd]
		w, h, rw, rh := "—", "—", "—", "—"
		if ac.nw > 0 {
			w = signed(ac.w/float64(ac.nw)/100) + seedsNote(ac.nw, len(fin))
			rw = count(ac.rw / ac.nw)
		}
		if ac.nh > 0 {
			h = signed(ac.h/float64(ac.nh)/100) + seedsNote(ac.nh, len(fin))
			rh = count(ac.rh / ac.nh)
		}
		p("| %d | %s | %s | %s | %s |\n", rd, w, h, rw, rh)
	}
	p("\nGains are points of %s (val where a boundary has no test score), after minus before each phase; gains and model calls are means over the %s that ran such a phase in that round.\n\n", meta.curveLabel(), plural(len(fin), "finished seed"))

	base := baseHarnessGains(runs, domain)
	var ss []string
	if len(base) > 0 {
		ss = append(ss, fmt.Sprintf("Harness search on the base weights (harness-only's first harness phase, mean over %s): %s points.", plural(len(base), "seed"), signed(mean(base)/100)))
	} else {
		ss = append(ss, "No finished harness-only run with a harness phase, so harness search on the base weights is unknown.")
	}
	if len(before) > 0 {
		ss = append(ss, fmt.Sprintf("Harness phases before any weight phase in %s: %s points per phase (mean over %s).", whale, signed(mean(before)/100), plural(len(before), "phase")))
	}
	if len(after) > 0 {
		ss = append(ss, fmt.Sprintf("Harness phases after the first weight phase in %s: %s points per phase (mean over %s).", whale, signed(mean(after)/100), plural(len(after), "phase")))
	} else {
		ss = append(ss, fmt.Sprintf("%s ran no harness phase after a weight phase.", whale))
	}
	p("%s\n\n", strings.Join(ss, " "))
	n := float64(len(fin))
	mw, mh := totalW/n, totalH/n
	p("Over a whole run, %s's weight phases gained %s points and its harness phases %s (mean over seeds): %s.\n\n",
		whale, signed(mw/100), signed(mh/100), bottleneck(mw, mh))
}

// baseHarnessGains is, per finished harness-only run of domain, what its
// first harness phase gained: harness search on the base weights.
func baseHarnessGains(runs []Run, domain string) []float64 {
	var base []float64
	for _, r := range runs {
		if r.Domain != domain || r.Condition != HarnessOnly || !r.Done {
			continue
		}
		for _, g := range phaseGains(r) {
			if g.phase == PhaseHarness {
				base = append(base, g.gain)
				break
			}
		}
	}
	return base
}

// bottleneck reads which side of the model+harness pair held the run back,
// from the points its weight phases (w) and harness phases (h) gained.
// Within a point of each other, or both within a point of zero, it does not
// guess.
func bottleneck(w, h float64) string {
	switch {
	case math.Abs(w-h) <= 1 || (math.Abs(w) <= 1 && math.Abs(h) <= 1):
		return "the bottleneck is unclear (the two sides are within 1 point)"
	case w > h:
		return "the weights look like the bottleneck (weight phases gained most)"
	}
	return "the harness looks like the bottleneck (harness phases gained most)"
}

func seedsNote(n, of int) string {
	if n == of {
		return ""
	}
	return fmt.Sprintf(" (%d of %d seeds)", n, of)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// points formats a fraction as points with one decimal.
func points(f float64) string { return fmt.Sprintf("%.1f", roundZero(100*f)) }

// signed formats a fraction as signed points with one decimal.
func signed(f float64) string { return fmt.Sprintf("%+.1f", roundZero(100*f)) }

// roundZero keeps a rounding of a tiny loss from reading as "-0.0".
func roundZero(v float64) float64 {
	if math.Abs(v) < 0.05 {
		return 0
	}
	return v
}

// count formats rollouts with thousands separators.
func count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// seedList names seeds: "seed 2", "seeds 1, 3".
func seedList(s []uint64) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.FormatUint(v, 10)
	}
	if len(s) == 1 {
		return "seed " + parts[0]
	}
	return "seeds " + strings.Join(parts, ", ")
}

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], "; ") + "; and " + parts[len(parts)-1]
}

// writeHealth is the domain's weight-phase health table: per condition,
// means over its finished runs of the weight steps' token entropy, of val
// pass@k − mean@k at the start and at the last boundary, and of test
// pass@8 − mean@8 of the best checkpoint. Runs stored before whale measured
// these are left out of the means that need them; a condition with none
// left shows a dash.
func writeHealth(b *bytes.Buffer, runs []Run, domain string) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	var rows []string
	for _, c := range Conditions {
		var ent, start, end, test []float64
		for _, r := range runs {
			if r.Domain != domain || r.Condition != c || !r.Done {
				continue
			}
			if r.HasEntropy {
				ent = append(ent, r.Entropy)
			}
			if n := len(r.Curve); n > 1 && r.Curve[0].HasPass && r.Curve[n-1].HasPass {
				start = append(start, r.Curve[0].ValPass-r.Curve[0].Val)
				end = append(end, r.Curve[n-1].ValPass-r.Curve[n-1].Val)
			}
			test = append(test, r.BestTestPass8-r.BestTestMean8)
		}
		if len(test) == 0 {
			continue
		}
		e, spread := "—", "—"
		if len(ent) > 0 {
			e = fmt.Sprintf("%.3f", mean(ent))
		}
		if len(start) > 0 {
			spread = fmt.Sprintf("%s → %s", signed(mean(start)), signed(mean(end)))
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |\n", c, e, spread, signed(mean(test))))
	}
	if len(rows) == 0 {
		return
	}
	p("Weight-phase health (means over finished seeds): the token entropy of the weight steps' samples, and how far pass@k rises above mean@k — the room a voting harness or the next weight phase has, which a policy collapsed onto one answer per task loses.\n\n")
	p("| condition | token entropy (nats) | val pass@k − mean@k, start → end (points) | test pass@8 − mean@8 (points) |\n|---|---:|---:|---:|\n")
	for _, r := range rows {
		p("%s", r)
	}
	p("\n")
}

// accountingText says what an accounting compares.
func accountingText(acc string) string {
	if acc == AccountingPaper {
		return "The paper's protocol: WHALE, staged and fast-slow get weight-only's weight ledger (training calls) and harness-only's search ledger (harness-scoring calls), each phase stopping at its own ledger; " +
			"vote-only (h0 voting over k samples, nothing trained or searched) spends neither. Test-time calls per test episode are counted apart: a harness that votes buys its score with them."
	}
	return "Every condition gets the same total of training and search calls (the sum of the paper's two ledgers): weight-only trains with all of it, harness-only searches with all of it. " +
		"WHALE, staged, fast-slow and vote-only are the paper accounting's runs (their totals are already that sum)."
}

// steeredText names the runs a person steered (control commands that
// change what a run computes), "" when none was.
func steeredText(runs []Run) string {
	var parts []string
	for _, r := range runs {
		if r.Steered > 0 {
			parts = append(parts, fmt.Sprintf("%s (%s)", r.RunID, plural(r.Steered, "control command")))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return joinAnd(parts) + ": a person changed these runs while they ran, so they are not plain measurements of their condition"
}
