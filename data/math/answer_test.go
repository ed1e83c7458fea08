package math

import (
	"math/big"
	"testing"
)

func TestCorrectAcceptsEveryForm(t *testing.T) {
	gold := big.NewRat(1234, 1)
	for _, s := range []string{"1234", "$1,234.00", "1234 apples", "The answer is 1234.", "1,234", "1234.0",
		"#### 1234", "Answer: $1234", `\boxed{1234}`, "So she has 1234 marbles left.", "3 * 411 + 1 = 1234",
		"The answer is 1234, since 1000 + 234 = 1234.", " 1234\n", "the answer is: 1234 dollars"} {
		if !Correct(s, gold) {
			t.Errorf("Correct(%q, 1234) = false", s)
		}
	}
	for _, s := range []string{"1233", "1235", "1234.5", "12.34", "123", "12345", "-1234", "The answer is 1233.",
		"no idea", "", "The answer is 12, not 1234", "1234/2"} {
		if Correct(s, gold) {
			t.Errorf("Correct(%q, 1234) = true", s)
		}
	}
}

func TestCorrectDecimals(t *testing.T) {
	cases := []struct {
		text string
		gold *big.Rat
		want bool
	}{
		{"91.25", big.NewRat(365, 4), true},
		{"$91.25", big.NewRat(365, 4), true},
		{"91.250", big.NewRat(365, 4), true},
		{"91.3", big.NewRat(365, 4), false}, // a terminating gold must be given exactly
		{"91.2", big.NewRat(365, 4), false},
		{"3.33", big.NewRat(10, 3), true}, // non-terminating: rounding to 2+ places is accepted
		{"3.333", big.NewRat(10, 3), true},
		{"3.3", big.NewRat(10, 3), false}, // one place is too coarse
		{"3.34", big.NewRat(10, 3), false},
		{"0.5", big.NewRat(1, 2), true},
		{".5", big.NewRat(1, 2), true},
		{"1/2", big.NewRat(1, 2), true},
		{"0.30000000000000004", big.NewRat(3, 10), true}, // float noise within 1e-9
		{"0.3001", big.NewRat(3, 10), false},
		{"-5", big.NewRat(-5, 1), true},
		{"It is -5 degrees", big.NewRat(-5, 1), true},
		{"3-5 days", big.NewRat(-5, 1), false}, // a hyphen, not a sign
		{"25%", big.NewRat(25, 1), true},
	}
	for _, c := range cases {
		if got := Correct(c.text, c.gold); got != c.want {
			t.Errorf("Correct(%q, %s) = %v, want %v", c.text, c.gold.RatString(), got, c.want)
		}
	}
}

func TestRoundTo(t *testing.T) {
	for _, c := range []struct {
		v      *big.Rat
		places int
		want   string
	}{{big.NewRat(10, 3), 2, "3.33"}, {big.NewRat(2, 3), 2, "0.67"}, {big.NewRat(-2, 3), 2, "-0.67"}, {big.NewRat(5, 2), 0, "3"}, {big.NewRat(1, 8), 2, "0.13"}} {
		if got := Format(RoundTo(c.v, c.places)); got != c.want {
			t.Errorf("RoundTo(%s, %d) = %s, want %s", c.v.RatString(), c.places, got, c.want)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{"The answer is $1,234.00.", "#### 72", "3-5", "−7", "1/0", `\boxed{3/4}`, "answer: ", "1,23,456"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAnswer(s)
		if err != nil {
			return
		}
		if a.Value == nil || a.Places < 0 {
			t.Fatalf("ParseAnswer(%q) = %+v", s, a)
		}
		// The canonical rendering of a parsed answer is itself correct.
		if !Correct(Format(a.Value), a.Value) {
			t.Fatalf("Format(%s) not accepted for itself", a.Value.RatString())
		}
	})
}
