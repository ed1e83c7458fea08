package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart size: 8×5 in at ChartDPI, so ChartWidth×ChartHeight pixels.
const (
	ChartDPI    = 150
	ChartWidth  = 8 * ChartDPI
	ChartHeight = 5 * ChartDPI
)

// legendGap separates the plot from the legend strip on its right; the
// strip is as wide as the legend's longest entry, so the legend never covers
// a curve and is never cut.
const legendGap = 8

// conditionStyle gives each condition a colour from the Okabe–Ito palette
// (readable by colour-blind readers) and the two one-shot baselines a dash,
// so the chart also reads in greyscale.
var conditionStyle = map[string]struct {
	col    color.RGBA
	dashes []vg.Length
	width  vg.Length
}{
	"weight-only":    {color.RGBA{0xE6, 0x9F, 0x00, 0xFF}, nil, 2},
	"harness-only":   {color.RGBA{0x56, 0xB4, 0xE9, 0xFF}, nil, 2},
	"staged":         {color.RGBA{0x00, 0x9E, 0x73, 0xFF}, []vg.Length{vg.Points(6), vg.Points(3)}, 2},
	"fast-slow":      {color.RGBA{0xCC, 0x79, 0xA7, 0xFF}, []vg.Length{vg.Points(2), vg.Points(2)}, 2},
	"whale-fixed":    {color.RGBA{0x00, 0x72, 0xB2, 0xFF}, nil, 2.75},
	"whale-adaptive": {color.RGBA{0xD5, 0x5E, 0x00, 0xFF}, nil, 2.75},
}

// Phase shading behind the curves: light enough that lines stay readable.
// Translucent colours are NRGBA: vgimg reads color.RGBA as premultiplied.
var (
	harnessShade = color.NRGBA{0xF0, 0xE4, 0x42, 0x50}
	weightShade  = color.NRGBA{0x99, 0x99, 0x99, 0x22}
)

// Chart renders the domain's chart as PNG bytes: score against budgeted
// rollouts, one line per condition (mean over finished seeds, each seed drawn
// thinly behind it) and the phases of the domain's first finished
// whale-fixed run shaded; meta names the boundary measurement. It assumes
// runs passed Validate.
func Chart(runs []Run, domain string, meta Meta) ([]byte, error) {
	runs = sortedRuns(runs)
	p := plot.New()
	p.Title.Text = domain + ": score against the budget spent"
	p.X.Label.Text = "model calls (train + search)"
	p.X.Tick.Marker = niceTicks{rolloutLabel}
	p.Y.Label.Text = meta.curveLabel() + " (points)"
	p.Y.Tick.Marker = niceTicks{pointLabel}
	p.Add(plotter.NewGrid())

	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(9)
	leg.Padding = vg.Points(3)

	shadePhases(p, &leg, runs, domain) // first, so every line is drawn over it

	ymin, ymax, xmax := math.Inf(1), math.Inf(-1), 0.0
	anyVal, anyLine := false, false
	for _, cond := range Conditions {
		var fin []Run
		for _, r := range runs {
			if r.Domain == domain && r.Condition == cond && r.Done && len(r.Curve) > 0 {
				fin = append(fin, r)
			}
		}
		if len(fin) == 0 {
			continue
		}
		// One split per condition, so a mean never mixes test and val.
		test := true
		for _, r := range fin {
			test = test && hasTest(r)
		}
		st := conditionStyle[cond]
		var seeds [][]xy
		for _, r := range fin {
			s := series(r, test)
			if len(s) == 0 {
				continue
			}
			seeds = append(seeds, s)
			thin, err := plotter.NewLine(toXYs(s))
			if err != nil {
				return nil, fmt.Errorf("report: chart %s: seed %d of %s: %w", domain, r.Seed, cond, err)
			}
			faint := color.NRGBA{st.col.R, st.col.G, st.col.B, 0x50}
			thin.StepStyle = plotter.PostStep
			thin.LineStyle = draw.LineStyle{Color: faint, Width: vg.Points(0.8), Dashes: st.dashes}
			p.Add(thin)
		}
		if len(seeds) == 0 {
			continue
		}
		m := meanCurve(seeds)
		line, err := plotter.NewLine(toXYs(m))
		if err != nil {
			return nil, fmt.Errorf("report: chart %s: mean of %s: %w", domain, cond, err)
		}
		line.StepStyle = plotter.PostStep
		line.LineStyle = draw.LineStyle{Color: st.col, Width: vg.Points(float64(st.width)), Dashes: st.dashes}
		p.Add(line)
		name := fmt.Sprintf("%s (%s)", cond, plural(len(seeds), "seed"))
		if !test {
			name += " on val"
			anyVal = true
		}
		leg.Add(name, line)
		anyLine = true
		for _, s := range seeds {
			for _, q := range s {
				ymin, ymax = min(ymin, 100*q.y), max(ymax, 100*q.y)
				xmax = max(xmax, float64(q.x))
			}
		}
	}
	if anyVal {
		p.Y.Label.Text = meta.curveLabel() + " (points; val mean@k for runs without test points)"
	}
	if !anyLine {
		p.Title.Text = domain + ": no finished run to draw"
		ymin, ymax = 0, 100
	}
	// Zoom on the data, with a margin, but never past the 0–100 scale.
	pad := max(2, 0.05*(ymax-ymin))
	p.Y.Min, p.Y.Max = max(0, math.Floor(ymin-pad)), min(100, math.Ceil(ymax+pad))
	p.X.Min = 0
	if xmax > 0 {
		p.X.Max = xmax
	}

	return renderPNG(p, &leg, domain)
}

// shadePhases shades the phases of the domain's first finished whale-fixed
// run behind the curves.
func shadePhases(p *plot.Plot, leg *plot.Legend, runs []Run, domain string) {
	r, ok := firstFinished(runs, WhaleFixed, domain)
	if !ok {
		return
	}
	h, w := phaseSpans(r)
	if len(w) > 0 {
		sh := &shade{spans: w, col: weightShade}
		p.Add(sh)
		leg.Add(fmt.Sprintf("whale-fixed seed %d: weight phase", r.Seed), sh)
	}
	if len(h) > 0 {
		sh := &shade{spans: h, col: harnessShade}
		p.Add(sh)
		leg.Add(fmt.Sprintf("whale-fixed seed %d: harness phase", r.Seed), sh)
	}
}

// renderPNG draws the plot with its legend to the right, as PNG bytes.
func renderPNG(p *plot.Plot, leg *plot.Legend, domain string) ([]byte, error) {
	img := vgimg.NewWith(vgimg.UseWH(8*vg.Inch, 5*vg.Inch), vgimg.UseDPI(ChartDPI), vgimg.UseBackgroundColor(color.White))
	c := draw.New(img)
	lr := leg.Rectangle(c)
	legendWidth := lr.Max.X - lr.Min.X + 2*vg.Points(legendGap)
	p.Draw(draw.Crop(c, 0, -legendWidth, 0, 0))
	leg.Draw(draw.Crop(c, c.Max.X-c.Min.X-legendWidth+vg.Points(legendGap), -vg.Points(legendGap), 0, -vg.Points(40)))

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: chart %s: encode PNG: %w", domain, err)
	}
	return buf.Bytes(), nil
}

func firstFinished(runs []Run, cond, domain string) (Run, bool) {
	for _, r := range runs {
		if r.Domain == domain && r.Condition == cond && r.Done {
			return r, true
		}
	}
	return Run{}, false
}

type span struct{ from, to float64 }

// phaseSpans returns r's harness and weight phases as rollout spans.
func phaseSpans(r Run) (harness, weights []span) {
	for _, p := range r.Curve {
		s := span{float64(p.PhaseStart), float64(p.Rollouts)}
		switch p.Phase {
		case PhaseHarness:
			harness = append(harness, s)
		case PhaseWeights:
			weights = append(weights, s)
		}
	}
	return harness, weights
}

// meanCurve averages seeds' curves on the union of their boundaries. Between
// boundaries a seed holds its last score (a run's score is only known at a
// kept checkpoint, and it is that checkpoint's model until the next), and
// after its last boundary it keeps its final score, so seeds whose phases end
// at different rollouts still average point by point. Chart draws every
// curve as the same post-steps, so the thin seeds and the thick mean agree.
func meanCurve(seeds [][]xy) []xy {
	var grid []int
	for _, s := range seeds {
		for _, q := range s {
			grid = append(grid, q.x)
		}
	}
	slices.Sort(grid)
	grid = slices.Compact(grid)
	out := make([]xy, 0, len(grid))
	for _, x := range grid {
		var sum float64
		for _, s := range seeds {
			v := s[0].y
			for _, q := range s {
				if q.x > x {
					break
				}
				v = q.y
			}
			sum += v
		}
		out = append(out, xy{x, sum / float64(len(seeds))})
	}
	return out
}

func toXYs(s []xy) plotter.XYs {
	out := make(plotter.XYs, len(s))
	for i, q := range s {
		out[i].X, out[i].Y = float64(q.x), 100*q.y
	}
	return out
}

// shade fills vertical bands over the whole data area behind the curves. It
// is deliberately no DataRanger, so it never stretches the axes.
type shade struct {
	spans []span
	col   color.Color
}

func (s *shade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, sp := range s.spans {
		x0, x1 := max(trX(sp.from), c.Min.X), min(trX(sp.to), c.Max.X)
		if x1 <= x0 {
			continue
		}
		c.FillPolygon(s.col, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

func (s *shade) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.col, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// niceTicks labels every multiple of the smallest 1-2-5 step that gives at
// about eight labels over [lo, hi], with an unlabelled tick halfway between, so both
// axes stay readable at any scale (gonum's default labels too few on a
// narrow score range).
type niceTicks struct{ label func(float64) string }

func (t niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: t.label(lo)}}
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ts []plot.Tick
	for i := math.Ceil(lo/step*2 - 1e-9); i*step/2 <= hi+1e-9*step; i++ {
		v := i * step / 2
		tk := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			tk.Label = t.label(v)
		}
		ts = append(ts, tk)
	}
	return ts
}

// rolloutLabel writes a rollout count with thousands separators.
func rolloutLabel(v float64) string { return count(int(math.Round(v))) }

// pointLabel writes a score in points without float noise.
func pointLabel(v float64) string { return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64) }
