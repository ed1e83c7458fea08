package math

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Bounds of one calc evaluation. They bound work by counting, never by
// time, so a result never depends on machine load.
const (
	// MaxExprLen is the longest expression accepted, in bytes.
	MaxExprLen = 256
	// MaxDepth bounds nesting of parentheses and unary signs.
	MaxDepth = 32
	// MaxSteps bounds the number of numbers and operators evaluated (with
	// MaxExprLen it keeps the work of one call small and fixed).
	MaxSteps = 200
	// MaxExponent bounds |n| in x^n.
	MaxExponent = 64
	// maxBits bounds the numerator and denominator of every intermediate
	// value; beyond it a result is an overflow.
	maxBits = 256
)

// Magnitude limit: any intermediate with |x| > 10^30 is an overflow.
var maxMagnitude = new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil))

// ErrDivByZero is returned for x/0 and x%0.
var ErrDivByZero = errors.New("division by zero")

// ErrOverflow is returned when a value leaves the bounds above.
var ErrOverflow = errors.New("overflow: result too large")

// Eval evaluates an arithmetic expression exactly, over rational numbers:
// + - * / with the usual precedence, % (remainder of truncated division,
// x - y*trunc(x/y)), ^ (integer powers only, right associative, binding
// tighter than unary minus: -2^2 = -4), parentheses, decimals (".5",
// "2.50"), thousands separators ("1,234") and unary plus and minus. The
// signs × ÷ − and ** are read as * / - ^. Because the arithmetic is exact,
// 0.1+0.2 is exactly 0.3; only Format rounds.
func Eval(expr string) (*big.Rat, error) {
	if len(expr) > MaxExprLen {
		return nil, fmt.Errorf("expression longer than %d bytes", MaxExprLen)
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("empty expression")
	}
	p := &parser{toks: toks}
	v, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q at offset %d", p.toks[p.pos].text, p.toks[p.pos].off)
	}
	return v, nil
}

// Format renders a value as a decimal: exactly when it has a finite
// decimal expansion, otherwise rounded to 10 decimal places; trailing zeros
// are trimmed ("2.50" → "2.5", "3.0" → "3").
func Format(v *big.Rat) string {
	if v.IsInt() {
		return v.Num().String()
	}
	places, exact := decimalPlaces(v.Denom())
	if !exact || places > 10 {
		places = 10
	}
	s := v.FloatString(places)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// decimalPlaces reports whether 1/d has a finite decimal expansion and,
// if so, how many places it needs: d must be 2^a 5^b, needing max(a, b).
func decimalPlaces(d *big.Int) (int, bool) {
	x := new(big.Int).Set(d)
	two, five := big.NewInt(2), big.NewInt(5)
	var a, b int
	m := new(big.Int)
	for x.Cmp(big.NewInt(1)) > 0 {
		if m.Mod(x, two).Sign() == 0 {
			x.Quo(x, two)
			a++
		} else if m.Mod(x, five).Sign() == 0 {
			x.Quo(x, five)
			b++
		} else {
			return 0, false
		}
	}
	return max(a, b), true
}

type token struct {
	kind byte // 'n' number, or the operator/paren itself
	text string
	num  *big.Rat
	off  int
}

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9' || c == '.':
			j, digits := i, ""
			for j < len(s) {
				if s[j] >= '0' && s[j] <= '9' || s[j] == '.' {
					digits += s[j : j+1]
					j++
				} else if s[j] == ',' && isDigits(s, j+1, 3) && !isDigits(s, j+4, 1) && !strings.Contains(digits, ".") {
					j++ // a thousands separator: exactly three digits follow
				} else {
					break
				}
			}
			if strings.Count(digits, ".") > 1 || digits == "." {
				return nil, fmt.Errorf("malformed number %q at offset %d", s[i:j], i)
			}
			if len(digits) > 40 {
				return nil, fmt.Errorf("number at offset %d has more than 40 digits", i)
			}
			v, ok := new(big.Rat).SetString(digits)
			if !ok {
				return nil, fmt.Errorf("malformed number %q at offset %d", s[i:j], i)
			}
			toks = append(toks, token{kind: 'n', text: s[i:j], num: v, off: i})
			i = j
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			toks = append(toks, token{kind: '^', text: "**", off: i})
			i += 2
		case strings.IndexByte("+-*/%^()", c) >= 0:
			toks = append(toks, token{kind: c, text: s[i : i+1], off: i})
			i++
		case strings.HasPrefix(s[i:], "×"):
			toks = append(toks, token{kind: '*', text: "×", off: i})
			i += len("×")
		case strings.HasPrefix(s[i:], "÷"):
			toks = append(toks, token{kind: '/', text: "÷", off: i})
			i += len("÷")
		case strings.HasPrefix(s[i:], "−"):
			toks = append(toks, token{kind: '-', text: "−", off: i})
			i += len("−")
		default:
			r := []rune(s[i:])[0]
			return nil, fmt.Errorf("unexpected character %q at offset %d", r, i)
		}
	}
	return toks, nil
}

func isDigits(s string, from, n int) bool {
	if from+n > len(s) {
		return false
	}
	for k := from; k < from+n; k++ {
		if s[k] < '0' || s[k] > '9' {
			return false
		}
	}
	return true
}

type parser struct {
	toks  []token
	pos   int
	steps int
}

func (p *parser) peek() byte {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].kind
	}
	return 0
}

func (p *parser) step() error {
	p.steps++
	if p.steps > MaxSteps {
		return fmt.Errorf("more than %d steps", MaxSteps)
	}
	return nil
}

func (p *parser) expr(depth int) (*big.Rat, error) {
	v, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for op := p.peek(); op == '+' || op == '-'; op = p.peek() {
		p.pos++
		w, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		if err := p.step(); err != nil {
			return nil, err
		}
		if op == '+' {
			v = new(big.Rat).Add(v, w)
		} else {
			v = new(big.Rat).Sub(v, w)
		}
		if err := bounded(v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (p *parser) term(depth int) (*big.Rat, error) {
	v, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for op := p.peek(); op == '*' || op == '/' || op == '%'; op = p.peek() {
		p.pos++
		w, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		if err := p.step(); err != nil {
			return nil, err
		}
		switch op {
		case '*':
			v = new(big.Rat).Mul(v, w)
		case '/':
			if w.Sign() == 0 {
				return nil, ErrDivByZero
			}
			v = new(big.Rat).Quo(v, w)
		case '%':
			if w.Sign() == 0 {
				return nil, ErrDivByZero
			}
			q := new(big.Rat).Quo(v, w)
			t := new(big.Int).Quo(q.Num(), q.Denom()) // truncates toward zero
			v = new(big.Rat).Sub(v, new(big.Rat).Mul(w, new(big.Rat).SetInt(t)))
		}
		if err := bounded(v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func (p *parser) unary(depth int) (*big.Rat, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("nested deeper than %d", MaxDepth)
	}
	switch p.peek() {
	case '-':
		p.pos++
		if err := p.step(); err != nil {
			return nil, err
		}
		v, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return new(big.Rat).Neg(v), nil
	case '+':
		p.pos++
		if err := p.step(); err != nil {
			return nil, err
		}
		return p.unary(depth + 1)
	}
	return p.power(depth)
}

func (p *parser) power(depth int) (*big.Rat, error) {
	base, err := p.primary(depth)
	if err != nil {
		return nil, err
	}
	if p.peek() != '^' {
		return base, nil
	}
	p.pos++
	exp, err := p.unary(depth + 1) // right associative: 2^3^2 = 2^9
	if err != nil {
		return nil, err
	}
	if err := p.step(); err != nil {
		return nil, err
	}
	return pow(base, exp)
}

func pow(base, exp *big.Rat) (*big.Rat, error) {
	if !exp.IsInt() {
		return nil, errors.New("only integer exponents are supported")
	}
	if !exp.Num().IsInt64() || abs64(exp.Num().Int64()) > MaxExponent {
		return nil, fmt.Errorf("exponent beyond ±%d", MaxExponent)
	}
	n := exp.Num().Int64()
	if n < 0 && base.Sign() == 0 {
		return nil, ErrDivByZero
	}
	bits := max(base.Num().BitLen(), base.Denom().BitLen())
	if int64(bits-1)*abs64(n) > maxBits {
		return nil, ErrOverflow
	}
	e := big.NewInt(abs64(n))
	num := new(big.Int).Exp(base.Num(), e, nil)
	den := new(big.Int).Exp(base.Denom(), e, nil)
	v := new(big.Rat).SetFrac(num, den)
	if n < 0 {
		v.Inv(v)
	}
	return v, bounded(v)
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func (p *parser) primary(depth int) (*big.Rat, error) {
	if p.pos >= len(p.toks) {
		return nil, errors.New("expression ends early")
	}
	t := p.toks[p.pos]
	switch t.kind {
	case 'n':
		p.pos++
		if err := p.step(); err != nil {
			return nil, err
		}
		return t.num, bounded(t.num)
	case '(':
		if depth+1 > MaxDepth {
			return nil, fmt.Errorf("nested deeper than %d", MaxDepth)
		}
		p.pos++
		v, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			if p.pos >= len(p.toks) {
				return nil, fmt.Errorf("missing ')' for '(' at offset %d", t.off)
			}
			return nil, fmt.Errorf("unexpected %q at offset %d, want ')'", p.toks[p.pos].text, p.toks[p.pos].off)
		}
		p.pos++
		return v, nil
	}
	return nil, fmt.Errorf("unexpected %q at offset %d", t.text, t.off)
}

func bounded(v *big.Rat) error {
	if v.Num().BitLen() > maxBits || v.Denom().BitLen() > maxBits {
		return ErrOverflow
	}
	if new(big.Rat).Abs(v).Cmp(maxMagnitude) > 0 {
		return ErrOverflow
	}
	return nil
}

// Calc is the math domain's calculator tool.
type Calc struct{}

// Name is "calc".
func (Calc) Name() string { return "calc" }

// Description is the one line a prompt shows.
func (Calc) Description() string {
	return fmt.Sprintf(`calc: evaluate an arithmetic expression exactly; + - * / %% (remainder) ^ (integer power), parentheses, decimals, unary minus; args: the expression as plain text, or {"expression": "..."}; at most %d characters`, MaxExprLen)
}

// Call evaluates args (plain text, or a JSON object with "expression" or
// "expr") and returns the formatted value.
func (Calc) Call(args string) (string, error) {
	expr, err := calcArgs(args)
	if err != nil {
		return "", err
	}
	v, err := Eval(expr)
	if err != nil {
		return "", fmt.Errorf("calc: %w", err)
	}
	return Format(v), nil
}

func calcArgs(args string) (string, error) {
	s := strings.TrimSpace(args)
	if !strings.HasPrefix(s, "{") {
		return s, nil
	}
	if len(s) > 4*MaxExprLen {
		return "", fmt.Errorf("calc: arguments longer than %d bytes", 4*MaxExprLen)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return "", fmt.Errorf("calc: arguments: invalid JSON: %w", err)
	}
	for _, k := range []string{"expression", "expr"} {
		if v, ok := m[k]; ok {
			e, ok := v.(string)
			if !ok {
				return "", fmt.Errorf("calc: arguments: field %s: want a string", k)
			}
			return e, nil
		}
	}
	return "", errors.New(`calc: arguments: want {"expression": "..."}`)
}
