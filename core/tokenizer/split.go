package tokenizer

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// A splitter cuts normalised text into pre-tokens (the Split pre-tokenizer
// with behavior "Isolated": matches and the text between them are both
// pieces). It appends the end offset of each piece, in bytes, to ends.
type splitter interface {
	split(s string, ends []int) []int
}

// qwenPattern is the pre-tokenizer regex of Qwen2, Qwen2.5 and Qwen3.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// gpt2Pattern is what a ByteLevel pre-tokenizer with use_regex splits by.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// newSplitter returns the hand-written scanner for the Qwen pattern, which
// is several times faster than a backtracking regex, and a regexp2 matcher
// (the same engine family as the Oniguruma regexes Hugging Face uses, with
// lookahead) for any other pattern. FuzzQwenSplitMatchesRegex holds the two
// to the same answers.
func newSplitter(pattern string) (splitter, error) {
	if pattern == qwenPattern {
		return newQwenSplitter(), nil
	}
	return newRegexSplitter(pattern)
}

type regexSplitter struct{ re *regexp2.Regexp }

func newRegexSplitter(pattern string) (regexSplitter, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return regexSplitter{}, fmt.Errorf("tokenizer: pre-tokenizer pattern %q: %w", pattern, err)
	}
	return regexSplitter{re}, nil
}

func (r regexSplitter) split(s string, ends []int) []int {
	// regexp2 works on runes; keep each rune's byte offset so that pieces
	// are cut from the original bytes, invalid ones included (each invalid
	// byte is one U+FFFD rune here, as when ranging over a string).
	runes := make([]rune, 0, len(s))
	offs := make([]int, 0, len(s)+1)
	for i, c := range s {
		runes = append(runes, c)
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	last := 0
	m, _ := r.re.FindRunesMatch(runes)
	for m != nil {
		start, end := offs[m.Index], offs[m.Index+m.Length]
		if end > start {
			if start > last {
				ends = append(ends, start)
			}
			ends = append(ends, end)
			last = end
		}
		m, _ = r.re.FindNextMatch(m)
	}
	if last < len(s) {
		ends = append(ends, len(s))
	}
	return ends
}

// qwenSplitter matches qwenPattern by hand. At each position the
// alternatives are tried in the pattern's order, with the backtracking a
// regex engine would do spelled out.
type qwenSplitter struct{ bmp *[1 << 16]uint8 }

func newQwenSplitter() qwenSplitter { return qwenSplitter{bmpClasses()} }

// bmpClasses is the class of every rune of the Basic Multilingual Plane, so
// that CJK or Cyrillic text costs one load per rune, not three searches of
// Unicode tables. Built on first use (a few milliseconds), 64 KiB.
var bmpClasses = sync.OnceValue(func() *[1 << 16]uint8 {
	var t [1 << 16]uint8
	for c := range t {
		t[c] = uint8(classOf(rune(c)))
	}
	return &t
})

const (
	clsOther  = iota // not \s, \p{L} or \p{N}
	clsLetter        // \p{L}
	clsNumber        // \p{N}
	clsSpace         // \s (Unicode White_Space)
)

func classOf(c rune) int {
	switch {
	case unicode.IsLetter(c):
		return clsLetter
	case unicode.IsNumber(c):
		return clsNumber
	case unicode.IsSpace(c):
		return clsSpace
	}
	return clsOther
}

// runeAt decodes the rune at s[i] and its class; an invalid byte is one
// U+FFFD, which is clsOther.
func (q qwenSplitter) runeAt(s string, i int) (rune, int, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1, int(q.bmp[c])
	}
	c, w := utf8.DecodeRuneInString(s[i:])
	if c < 1<<16 {
		return c, w, int(q.bmp[c])
	}
	return c, w, classOf(c)
}

func (q qwenSplitter) split(s string, ends []int) []int {
	for i := 0; i < len(s); {
		i = q.piece(s, i)
		ends = append(ends, i)
	}
	return ends
}

// piece returns the end of the pre-token that starts at i.
func (q qwenSplitter) piece(s string, i int) int {
	c, w, cls := q.runeAt(s, i)
	j := i + w
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' && j < len(s) {
		switch s[j] | 0x20 {
		case 's', 't', 'm', 'd':
			return j + 1
		case 'r', 'v':
			if j+1 < len(s) && s[j+1]|0x20 == 'e' {
				return j + 2
			}
		case 'l':
			if j+1 < len(s) && s[j+1]|0x20 == 'l' {
				return j + 2
			}
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if cls == clsLetter {
		return q.letters(s, j)
	}
	if cls != clsNumber && c != '\r' && c != '\n' && j < len(s) {
		if _, w2, cls2 := q.runeAt(s, j); cls2 == clsLetter {
			return q.letters(s, j+w2)
		}
	}
	// \p{N}
	if cls == clsNumber {
		return j
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	k := -1
	if cls == clsOther {
		k = j
	} else if c == ' ' && j < len(s) {
		if _, w2, cls2 := q.runeAt(s, j); cls2 == clsOther {
			k = j + w2
		}
	}
	if k >= 0 {
		for k < len(s) {
			_, w2, cls2 := q.runeAt(s, k)
			if cls2 != clsOther {
				break
			}
			k += w2
		}
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k
	}
	// c is whitespace. Find the run of whitespace it starts, the end of its
	// last line break, and the start of its last rune.
	end, afterBreak, lastStart, runes := i, -1, i, 0
	for end < len(s) {
		c2, w2, cls2 := q.runeAt(s, end)
		if cls2 != clsSpace {
			break
		}
		if c2 == '\r' || c2 == '\n' {
			afterBreak = end + w2
		}
		lastStart = end
		end += w2
		runes++
	}
	// \s*[\r\n]+ : the run up to its last line break
	if afterBreak > 0 {
		return afterBreak
	}
	// \s+(?!\S) : the whole run at the end of text, else all but its last
	// rune, which then starts the next piece (" word")
	if end == len(s) {
		return end
	}
	if runes > 1 {
		return lastStart
	}
	// \s+
	return end
}

func (q qwenSplitter) letters(s string, k int) int {
	for k < len(s) {
		_, w, cls := q.runeAt(s, k)
		if cls != clsLetter {
			break
		}
		k += w
	}
	return k
}
