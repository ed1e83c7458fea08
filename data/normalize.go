package data

import (
	"strings"
	"unicode"
)

// NormalizeText folds an answer for exact-match comparison: lower case,
// hyphens and slashes become spaces, other punctuation and symbols are
// dropped (so "1,234" and "1234" agree), the articles "a", "an" and "the"
// are removed (unless nothing else is left) and runs of white space
// collapse to one space.
func NormalizeText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '-' || r == '/' || r == '_' || r == '\u2013' || r == '\u2014':
			b.WriteByte(' ')
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
		case unicode.IsSpace(r) || unicode.IsControl(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	words := strings.Fields(b.String())
	out := make([]string, 0, len(words))
	for _, w := range words {
		if w != "a" && w != "an" && w != "the" {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		// An answer made only of articles ("A", a choice label) keeps them:
		// dropping them would make it equal to every empty answer.
		return strings.Join(strings.Fields(b.String()), " ")
	}
	return strings.Join(out, " ")
}
