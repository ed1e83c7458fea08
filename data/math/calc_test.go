package math

import (
	"errors"
	"strings"
	"testing"
)

func TestEval(t *testing.T) {
	cases := []struct{ in, want string }{
		{"1+2*3", "7"},
		{"(1+2)*3", "9"},
		{"0.1+0.2", "0.3"},
		{"10/4", "2.5"},
		{"10/3", "3.3333333333"},
		{"2/3", "0.6666666667"},
		{"-2^2", "-4"},
		{"(-2)^2", "4"},
		{"2^3^2", "512"},
		{"2^-2", "0.25"},
		{"7 % 3", "1"},
		{"-7 % 3", "-1"},
		{"7.5 % 2", "1.5"},
		{"1,234 * 2", "2468"},
		{"3 × 4 ÷ 2 − 1", "5"},
		{"2**10", "1024"},
		{"--3", "3"},
		{"+4", "4"},
		{".5 * 4", "2"},
		{"2.50", "2.5"},
		{"3.0", "3"},
		{"100 - 100.00", "0"},
		{"48/2", "24"},
	}
	for _, c := range cases {
		v, err := Eval(c.in)
		if err != nil {
			t.Errorf("Eval(%q): %v", c.in, err)
			continue
		}
		if got := Format(v); got != c.want {
			t.Errorf("Eval(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{"1/0", "division by zero"},
		{"5 % (2-2)", "division by zero"},
		{"0^-1", "division by zero"},
		{"10^40", "overflow"},
		{"99999999999999^3", "overflow"},
		{"2^0.5", "integer exponents"},
		{"2^100", "exponent beyond"},
		{"", "empty"},
		{"1+", "ends early"},
		{"(1+2", "missing ')'"},
		{"1+2)", "unexpected \")\""},
		{"1..2", "malformed number"},
		{"2(3)", "unexpected \"(\""},
		{"sqrt(4)", "unexpected character 's'"},
		{"import os", "unexpected character"},
		{strings.Repeat("(", 40) + "1" + strings.Repeat(")", 40), "nested deeper"},
		{strings.Repeat("-", 40) + "1", "nested deeper"},
		{strings.Repeat("1+", 200) + "1", "longer than"},
		{strings.Repeat("1+", 99) + "1", ""}, // 199 steps: allowed
	}
	for _, c := range cases {
		_, err := Eval(c.in)
		if c.want == "" {
			if err != nil {
				t.Errorf("Eval(%.30q...): %v, want success", c.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Eval(%.30q) error %v, want it to mention %q", c.in, err, c.want)
		}
	}
	if _, err := Eval("1/0"); !errors.Is(err, ErrDivByZero) {
		t.Errorf("1/0 gives %v, want ErrDivByZero", err)
	}
}

func TestEvalStepLimit(t *testing.T) {
	// n ones joined by n-1 pluses are 2n-1 steps.
	ok := strings.Repeat("1+", 100) + "1" // 201 steps
	if _, err := Eval(ok[2:]); err != nil {
		t.Fatalf("199 steps: %v", err)
	}
	if _, err := Eval(ok); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Fatalf("201 steps: %v, want a step-limit error", err)
	}
}

func TestCalcTool(t *testing.T) {
	c := Calc{}
	for _, args := range []string{"12*3", ` 12 * 3 `, `{"expression": "12*3"}`, `{"expr": "36"}`} {
		out, err := c.Call(args)
		if err != nil || out != "36" {
			t.Errorf("Call(%q) = %q, %v; want 36", args, out, err)
		}
	}
	for _, args := range []string{`{"expression": 5}`, `{"x": "1"}`, `{bad json`, "1/0"} {
		if out, err := c.Call(args); err == nil {
			t.Errorf("Call(%q) = %q, want an error", args, out)
		}
	}
	if !strings.Contains(c.Description(), `{"expression": "..."}`) {
		t.Errorf("description does not document the argument format: %s", c.Description())
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2*3", "(1+2)^3", "-2^-2", "10/3", "1,234.5%7", "((((1))))", "2**10", "3 × 4 ÷ 2 − 1", "1e5", "0^-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Eval(s)
		if err != nil {
			return
		}
		if err := bounded(v); err != nil {
			t.Fatalf("Eval(%q) returned an unbounded value", s)
		}
		// A formatted result parses back as an expression that is equal
		// (or, when rounded, within the printed precision).
		w, err := Eval(Format(v))
		if err != nil {
			t.Fatalf("Format(Eval(%q)) = %q does not evaluate: %v", s, Format(v), err)
		}
		if !Matches(Answer{Value: w, Places: 10}, v) && Format(w) != Format(v) {
			t.Fatalf("round trip of %q: %s vs %s", s, Format(v), Format(w))
		}
	})
}

func BenchmarkEval(b *testing.B) {
	for b.Loop() {
		if _, err := Eval("(12.5 * 4 + 3^4) / 7 - 1,234 % 5"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(1, 1000); err != nil {
			b.Fatal(err)
		}
	}
}
