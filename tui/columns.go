package tui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// column is one column of a list drawn by hand (the leaderboard, the
// checkpoints): as the window narrows, columns drop in the order of drop
// (1 first; 0 never drops), and the last column takes the width left.
type column struct {
	head  string
	width int
	drop  int
	right bool
}

// fitColumns keeps the columns that fit w with at least lastMin cells
// for the last one, dropping them in their stated order; it returns the
// kept columns' indices.
func fitColumns(cols []column, w, lastMin int) []int {
	keep := make([]bool, len(cols))
	for i := range keep {
		keep[i] = true
	}
	order := make([]int, 0, len(cols))
	for i, c := range cols {
		if c.drop > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cols[a].drop - cols[b].drop })
	need := func() int {
		n := 2 + lastMin // the list's selection marker
		for i, c := range cols[:len(cols)-1] {
			if keep[i] {
				n += c.width + 1
			}
		}
		return n
	}
	for _, i := range order {
		if need() <= w {
			break
		}
		keep[i] = false
	}
	var out []int
	for i := range cols {
		if keep[i] {
			out = append(out, i)
		}
	}
	return out
}

// joinCells lays cells out in the kept columns: each padded or cut to
// its column, the last as it is.
func joinCells(cols []column, kept []int, cells []string) string {
	var sb strings.Builder
	for n, i := range kept {
		c, s := cols[i], cells[i]
		if n == len(kept)-1 {
			sb.WriteString(s)
			break
		}
		if ansi.StringWidth(s) > c.width {
			s = ansi.Truncate(s, c.width, "…")
		}
		pad := strings.Repeat(" ", c.width-ansi.StringWidth(s))
		if c.right {
			sb.WriteString(pad + s)
		} else {
			sb.WriteString(s + pad)
		}
		sb.WriteByte(' ')
	}
	return sb.String()
}

// headLine is the kept columns' heads as one line.
func headLine(cols []column, kept []int) string {
	heads := make([]string, len(cols))
	for i, c := range cols {
		heads[i] = c.head
	}
	return joinCells(cols, kept, heads)
}
