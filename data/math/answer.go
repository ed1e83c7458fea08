package math

import (
	"errors"
	"math/big"
	"regexp"
	"strings"
)

// MaxAnswerLen bounds the answer text the verifier reads.
const MaxAnswerLen = 4096

// numberRE matches one number as people write it: an optional sign and
// dollar sign, digits with optional thousands separators, an optional
// decimal part, or a simple fraction ("3/4").
var numberRE = regexp.MustCompile(`[-−]?\$?\s?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d+/\d+|\d+|\.\d+)`)

// markers introduce a final answer; the first number after the last
// marker is the answer.
var markers = []string{"####", "answer is", "answer:", "answer =", `\boxed{`}

// Answer is a parsed final answer.
type Answer struct {
	Value *big.Rat
	// Places is how many decimal places the answer was written with.
	Places int
}

// ErrNoNumber is returned when an answer holds no number.
var ErrNoNumber = errors.New("no number in the answer")

// ParseAnswer reads the final number of an answer text. After a marker
// ("#### 72", "The answer is 72", "Answer: 72", "\boxed{72}") it takes the
// first number following the last marker; without one it takes the last
// number of the text (so "3 * 12 = 36" gives 36). Dollar signs,
// thousands separators, units and words around the number are ignored;
// "1,234.00", "$1234" and "1234 apples" all read as 1234.
func ParseAnswer(text string) (Answer, error) {
	if len(text) > MaxAnswerLen {
		text = text[len(text)-MaxAnswerLen:]
	}
	lower := asciiLower(text) // keeps byte offsets, unlike strings.ToLower on invalid UTF-8
	tail, marked := text, false
	for _, m := range markers {
		if i := strings.LastIndex(lower, m); i >= 0 {
			tail, marked = text[i+len(m):], true
			break
		}
	}
	locs := numberRE.FindAllStringIndex(tail, -1)
	if len(locs) == 0 && marked {
		tail = text // "Answer: see above, 12" is unusual; fall back to the whole text
		locs = numberRE.FindAllStringIndex(tail, -1)
		marked = false
	}
	if len(locs) == 0 {
		return Answer{}, ErrNoNumber
	}
	loc := locs[len(locs)-1]
	if marked {
		loc = locs[0]
	}
	return parseNumber(tail, loc[0], loc[1])
}

func parseNumber(s string, from, to int) (Answer, error) {
	tok := s[from:to]
	neg := false
	if strings.HasPrefix(tok, "-") || strings.HasPrefix(tok, "−") {
		// A minus right after a word or digit is a hyphen or a subtraction
		// ("3-4 days", "10-3"), not a sign.
		if from == 0 || !isWordByte(s[from-1]) {
			neg = true
		}
		tok = strings.TrimLeft(tok, "-−")
	}
	tok = strings.TrimSpace(strings.TrimPrefix(tok, "$"))
	tok = strings.ReplaceAll(tok, ",", "")
	v, ok := new(big.Rat).SetString(tok)
	if !ok {
		return Answer{}, ErrNoNumber
	}
	if neg {
		v.Neg(v)
	}
	places := 0
	if i := strings.IndexByte(tok, '.'); i >= 0 {
		places = len(tok) - i - 1
	}
	return Answer{Value: v, Places: places}, nil
}

func isWordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// relTol is the relative tolerance of Correct: wide enough for a float
// rendering of an exact value (0.30000000000000004), far narrower than any
// near miss a word problem can have.
const relTol = 1e-9

// Correct reports whether answer text equals the gold value. It accepts
// exact equality, a relative difference within 1e-9, and — only when the
// gold has no finite decimal expansion of at most six places (for
// example 10/3) — the gold rounded half away from zero to the two or more
// decimal places the answer was written with ("3.33" for 10/3). An
// answer of 3.8 for a gold of 3.75 is wrong.
func Correct(text string, gold *big.Rat) bool {
	a, err := ParseAnswer(text)
	if err != nil {
		return false
	}
	return Matches(a, gold)
}

// Matches is Correct on a parsed answer.
func Matches(a Answer, gold *big.Rat) bool {
	if a.Value.Cmp(gold) == 0 {
		return true
	}
	diff := new(big.Rat).Sub(a.Value, gold)
	diff.Abs(diff)
	scale := new(big.Rat).Abs(gold)
	if scale.Cmp(big.NewRat(1, 1)) < 0 {
		scale.SetInt64(1)
	}
	if diff.Cmp(new(big.Rat).Mul(scale, new(big.Rat).SetFloat64(relTol))) <= 0 {
		return true
	}
	if places, exact := decimalPlaces(gold.Denom()); exact && places <= 6 {
		return false
	}
	return a.Places >= 2 && RoundTo(gold, a.Places).Cmp(a.Value) == 0
}

// RoundTo rounds v half away from zero to places decimal places.
func RoundTo(v *big.Rat, places int) *big.Rat {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	x := new(big.Rat).Mul(v, new(big.Rat).SetInt(scale))
	num, den := new(big.Int).Abs(x.Num()), x.Denom()
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(r, big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if x.Sign() < 0 {
		q.Neg(q)
	}
	return new(big.Rat).SetFrac(q, scale)
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
