package kerneltest

import (
	"encoding/json"
	"fmt"
	"math"

	"whale/kernels"
)

// Reference returns the backend every other one is judged against: the
// float64 CPU backend, whose ops are plain Go loops (no assembly, no
// float32 rounding) summing in one fixed order.
func Reference() kernels.Backend { return kernels.NewCPU64() }

// Run runs c on be with guards pad elements wide and returns its outputs;
// a panic (an unsupported shape, a device error) or a failed Sync becomes
// the error.
func Run(be kernels.Backend, c Case, pad int) (outs []Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			outs, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	e := NewEnv(be, pad)
	c.Run(e)
	outs = e.Finish()
	if err := kernels.Sync(be); err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	return outs, nil
}

// Result is one case's verdict, as a line of a report.
type Result struct {
	Name  string  `json:"name"`
	Op    string  `json:"op,omitempty"`
	DType DType   `json:"dtype,omitempty"`
	Kind  string  `json:"kind"` // "exact", "f32" or "bf16" (Case.Kind)
	Tol   float64 `json:"tol"`
	// Err is the worst normalised error over the outputs, Worst the
	// output it came from.
	Err     Num            `json:"err"`
	Worst   string         `json:"worst_output,omitempty"`
	Outputs []OutputResult `json:"outputs,omitempty"`
	// Deterministic: the case run twice on the backend gave bit-identical
	// outputs.
	Deterministic bool   `json:"deterministic"`
	Pass          bool   `json:"pass"`
	Error         string `json:"error,omitempty"`
}

// OutputResult is one output's verdict.
type OutputResult struct {
	Name  string `json:"name"`
	Err   Num    `json:"err"`
	Exact bool   `json:"exact,omitempty"` // judged bit-exact
	Match bool   `json:"match"`
}

// Check runs c on ref and twice on be, with guards pad elements wide, and
// judges be's outputs (Judge). An error is a failure of the reference
// itself (a bug in the case); a failure on be is in the Result.
func Check(be, ref kernels.Backend, c Case, pad int) (Result, error) {
	want, err := Run(ref, c, pad)
	if err != nil {
		return Result{}, fmt.Errorf("%s on the reference %s: %w", c.Name, ref.Name(), err)
	}
	return judgeOn(be, c, pad, want), nil
}

// CheckAll checks every case of cs on be with guards pad elements wide,
// in order on the calling goroutine, and hands each verdict to each. The
// reference's outputs are computed ahead on workers goroutines (each
// with a Reference of its own), at most workers cases ahead of be, so
// that a fast backend does not wait on the float64 loops one case at a
// time. A failure of the reference stops the run with its error.
func CheckAll(be kernels.Backend, cs []Case, pad, workers int, each func(Case, Result)) error {
	workers = max(1, workers)
	type ref struct {
		outs []Output
		err  error
	}
	ahead := make([]chan ref, len(cs))
	for i := range ahead {
		ahead[i] = make(chan ref, 1)
	}
	next := make(chan int)
	done := make(chan struct{})
	defer close(done)
	for range workers {
		go func() {
			rb := Reference()
			for i := range next {
				outs, err := Run(rb, cs[i], pad)
				ahead[i] <- ref{outs, err}
			}
		}()
	}
	// The feeder lets a case start only once the one workers places
	// before it has been judged, which bounds the outputs held.
	judged := make(chan struct{}, workers)
	for range workers {
		judged <- struct{}{}
	}
	go func() {
		defer close(next)
		for i := range cs {
			select {
			case <-judged:
			case <-done:
				return
			}
			select {
			case next <- i:
			case <-done:
				return
			}
		}
	}()
	for i, c := range cs {
		w := <-ahead[i]
		if w.err != nil {
			return fmt.Errorf("%s on the reference: %w", c.Name, w.err)
		}
		each(c, judgeOn(be, c, pad, w.outs))
		judged <- struct{}{}
	}
	return nil
}

// judgeOn runs c twice on be and judges the outputs against want.
func judgeOn(be kernels.Backend, c Case, pad int, want []Output) Result {
	got, err := Run(be, c, pad)
	var again []Output
	if err == nil {
		again, err = Run(be, c, pad)
	}
	if err != nil {
		r := Result{Name: c.Name, Op: c.Op, DType: c.DType, Kind: c.Kind(), Tol: c.Tol()}
		r.Err, r.Error = Num(math.Inf(1)), err.Error()
		return r
	}
	return Judge(c, want, got, again)
}

// Judge compares a backend's outputs of c (got, and again from a second
// run) with the reference's (want): exact outputs (and every output of
// an exact case) bit for bit against the reference's rounded to float32,
// the others by their normalised error against c.Tol(); got and again
// must agree bit for bit.
func Judge(c Case, want, got, again []Output) Result {
	r := Result{Name: c.Name, Op: c.Op, DType: c.DType, Kind: c.Kind(), Tol: c.Tol()}
	if len(got) != len(want) || len(again) != len(want) {
		r.Err, r.Error = Num(math.Inf(1)), fmt.Sprintf("%d and %d outputs, the reference has %d", len(got), len(again), len(want))
		return r
	}
	r.Pass, r.Deterministic = true, true
	for i, w := range want {
		g := got[i]
		o := OutputResult{Name: w.Name, Exact: w.Exact || c.Exact}
		if o.Exact {
			rw := rounded(w.Vals)
			o.Err = Num(NormErr(g.Vals, rw))
			o.Match = SameBits(g.Vals, rw)
		} else {
			o.Err = Num(NormErr(g.Vals, w.Vals))
			o.Match = float64(o.Err) <= r.Tol
		}
		if !SameBits(g.Vals, again[i].Vals) {
			r.Deterministic = false
		}
		if worse(o.Err, r.Err) {
			r.Err, r.Worst = o.Err, w.Name
		}
		r.Pass = r.Pass && o.Match
		r.Outputs = append(r.Outputs, o)
	}
	r.Pass = r.Pass && r.Deterministic
	return r
}

// Failures describes what failed in r, one line an item; none when it
// passed.
func (r Result) Failures() []string {
	switch {
	case r.Pass:
		return nil
	case r.Error != "":
		return []string{r.Error}
	}
	var f []string
	if !r.Deterministic {
		f = append(f, "two runs of the same inputs differ (ops must be deterministic)")
	}
	for _, o := range r.Outputs {
		if !o.Match {
			if o.Exact {
				f = append(f, fmt.Sprintf("output %s: not bit-identical to the reference (normalised error %.3g)", o.Name, float64(o.Err)))
			} else {
				f = append(f, fmt.Sprintf("output %s: normalised error %.3g > tolerance %.0g (%s %s)", o.Name, float64(o.Err), r.Tol, r.Op, r.DType))
			}
		}
	}
	return f
}

// rounded is the reference's values as a float32 backend holds them.
func rounded(v []float64) []float64 {
	r := make([]float64, len(v))
	for i, x := range v {
		r[i] = float64(float32(x))
	}
	return r
}

// tiny keeps the normalisation finite where the reference's output is all
// zeros: any nonzero value then fails.
const tiny = 1e-30

// NormErr is max|got−want| / max(max|want|, tiny); a NaN anywhere in got
// where want has none makes it NaN (Go's max propagates NaN). NaN against
// NaN and an infinity against the same infinity count as equal.
func NormErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, m float64
	for i, w := range want {
		g := got[i]
		if math.IsNaN(w) && math.IsNaN(g) || math.IsInf(w, 0) && g == w {
			continue
		}
		d = max(d, math.Abs(g-w))
		m = max(m, math.Abs(w))
	}
	return d / max(m, tiny)
}

// SameBits reports whether a and b are bit-identical, any NaN equal to
// any NaN (payloads are not part of the contract).
func SameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) && math.IsNaN(b[i]) {
			continue
		}
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// Num is a float that JSON can hold even when it is NaN or Inf (as the
// strings "NaN", "+Inf", "-Inf").
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(f)
}

// worse reports whether error a is worse than b, NaN worst of all.
func worse(a, b Num) bool {
	if math.IsNaN(float64(b)) {
		return false
	}
	return math.IsNaN(float64(a)) || a > b
}
