package harnesses

import (
	"math/big"
	"regexp"
	"strings"
	"unicode"

	"go.starlark.net/syntax"
)

// The lint: a harness presents and validates; it must not solve. The
// sandbox already denies files and engines; the lint rejects what a static
// reading can see (literals that look like task data, reserved names,
// load), and the runtime rejects answers that do not occur in the model's
// completion (see Extracted).

var (
	// A FEN board: eight ranks of pieces and digits separated by slashes.
	fenRe = regexp.MustCompile(`[pnbrqkPNBRQK1-8]{1,8}(/[pnbrqkPNBRQK1-8]{1,8}){7}`)
	// Two or more UCI moves in a row: a line, not an example move.
	uciSeqRe = regexp.MustCompile(`\b[a-h][1-8][a-h][1-8][qrbn]?([\s,;]+[a-h][1-8][a-h][1-8][qrbn]?)+\b`)
	// A run of seven or more digits: an answer, not a budget.
	digitsRe = regexp.MustCompile(`\d{7,}`)
	// A solving annotation: words that mark a move as the mate, the win or
	// the answer ("this move mates", "(best)", "winning move"), or SAN's
	// mate sign on its own. A harness may say what a move is (the piece,
	// what it takes); judging it is the solver's work.
	solvingRe = regexp.MustCompile(`(?i)\b(?:(?:this|that|the|which|a) (?:move|check|capture) (?:mates|checkmates|wins|is (?:check)?mate|is (?:the )?(?:best|winning|correct|right|only))|(?:gives|delivers|forces) (?:check)?mate\b|is (?:check)?mate\b|mating (?:move|check|line)|winning (?:move|capture|check|line)|(?:best|correct|right|only) move(?: is|:)|solution(?: is|:))|\((?:best|mate|mates|checkmate|mating|winning|wins|solution|answer)\)|^\s*#\s*$`)
)

// maxIntLiteral is the largest integer literal the lint accepts: budgets
// and sizes fit well under it, task answers of seven digits and more do
// not.
var maxIntLiteral = big.NewInt(999_999)

// lintFile checks a parsed (not yet rewritten) file.
func lintFile(file string, f *syntax.File) []Issue {
	var issues []Issue
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.LoadStmt:
			issues = append(issues, issueAt(file, n.Load, "lint/load", "load is not allowed: a harness is one self-contained file"))
		case *syntax.Ident:
			if strings.HasPrefix(n.Name, guardPrefix) {
				issues = append(issues, issueAt(file, n.NamePos, "lint/reserved-name", "names starting with %s are reserved for the sandbox", guardPrefix))
			}
		case *syntax.Literal:
			issues = append(issues, lintLiteral(file, n)...)
		}
		return true
	})
	return issues
}

func lintLiteral(file string, l *syntax.Literal) []Issue {
	switch v := l.Value.(type) {
	case string:
		var out []Issue
		if m := fenRe.FindString(v); m != "" {
			out = append(out, issueAt(file, l.TokenPos, "lint/fen", "string literal contains a FEN position %q: a harness may not carry task data", clip(m)))
		}
		if m := uciSeqRe.FindString(v); m != "" {
			out = append(out, issueAt(file, l.TokenPos, "lint/uci-sequence", "string literal contains a sequence of UCI moves %q: a harness may show one example move, not a line", clip(m)))
		}
		if m := solvingRe.FindString(v); m != "" {
			out = append(out, issueAt(file, l.TokenPos, "lint/solving-annotation", "string literal annotates a move as solving (%q): a harness may present the position, not judge moves", clip(m)))
		}
		if m := digitsRe.FindString(v); m != "" {
			out = append(out, issueAt(file, l.TokenPos, "lint/long-digits", "string literal contains a run of %d digits %q: a harness may not carry answers", len(m), clip(m)))
		}
		return out
	case int64:
		if big.NewInt(v).CmpAbs(maxIntLiteral) > 0 {
			return []Issue{issueAt(file, l.TokenPos, "lint/long-digits", "integer literal %s has more than 6 digits: a harness may not carry answers (budgets are far smaller)", l.Raw)}
		}
	case *big.Int:
		return []Issue{issueAt(file, l.TokenPos, "lint/long-digits", "integer literal %s has more than 6 digits: a harness may not carry answers", clip(l.Raw))}
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// NormalizeAnswer is the light normalisation under which a submitted
// answer must occur in the completion: lower case, letters and digits
// only (punctuation and white space dropped). It matches what the
// verifiers ignore, so a harness may tidy an answer but not invent one.
func NormalizeAnswer(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// Extracted reports whether answer occurs in completion after
// NormalizeAnswer. An answer that normalises to nothing never occurs: an
// empty answer is a parse failure, not a submission.
func Extracted(answer, completion string) bool {
	a := NormalizeAnswer(answer)
	return a != "" && strings.Contains(NormalizeAnswer(completion), a)
}
