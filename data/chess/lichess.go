package chess

import (
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"whale/data"
)

// The lichess puzzle CSV columns, in their file order. OpeningTags is
// missing from older exports, so a headerless row has 9 or 10 fields.
var lichessColumns = []string{"PuzzleId", "FEN", "Moves", "Rating", "RatingDeviation", "Popularity", "NbPlays", "Themes", "GameUrl", "OpeningTags"}

var lichessRequired = []string{"PuzzleId", "FEN", "Moves", "Rating", "RatingDeviation", "Popularity", "NbPlays", "Themes"}

// rowError is what is wrong with one CSV row, and in which column.
type rowError struct {
	field, reason string
}

func (e *rowError) Error() string { return "field " + e.field + ": " + e.reason }

// ImportLichess reads a lichess puzzle CSV (PuzzleId, FEN, Moves, Rating,
// RatingDeviation, Popularity, NbPlays, Themes, GameUrl, OpeningTags; the
// header line is optional, and with it the columns may come in any order;
// a first line naming both PuzzleId and Moves is the header)
// and deals its puzzles into seeded splits: every puzzle, or with
// opts.Themes those carrying at least one of the themes named.
//
// A puzzle's FEN is the position before the opponent's trigger move
// Moves[0]; the task starts after it, the solver plays Moves[1], Moves[3],
// ... and the environment the moves between. A puzzle with a mate theme
// (mate, mateIn1 ... mateIn5) must list a line that ends in mate, with
// exactly N solver moves for mateInN below 5 (lichess's mateIn5 means five
// or more); any mating final move counts and an unlisted move that still
// forces mate is proved by search up to a mate in 3 (see Episode). Other
// puzzles must be solved with the listed moves, lichess's only-moves rule,
// except that a move that mates always wins.
//
// A task's Level is its number of solver moves (the mate depth for a mate
// puzzle), its ID "lichess-" and the PuzzleId, and its Problem names the
// opponent's trigger move.
//
// A malformed row (wrong field count, bad FEN, an illegal or unparseable
// move, a non-numeric rating, ...) is a data.BadLine naming the file, line
// and column. Without opts.SkipBad the first one is the error; with it the
// good rows are used and the bad ones returned.
func ImportLichess(path string, opts data.ImportOptions) (data.Domain, []data.BadLine, error) {
	var (
		tasks   []data.Task
		cols    map[string]int
		ncols   int
		idLine  = map[string]int{}
		dropped int
	)
	want, err := themeFilter(opts.Themes)
	if err != nil {
		return nil, nil, fmt.Errorf("chess: import lichess %s: %w", path, err)
	}
	bad, err := data.ScanLines(path, opts.SkipBad, func(line int, raw []byte) *data.BadLine {
		text := strings.TrimRight(string(raw), "\r")
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
			if isLichessHeader(text) {
				var err error
				if cols, ncols, err = lichessHeader(text); err != nil {
					return &data.BadLine{Field: "header", Reason: err.Error()}
				}
				return nil
			}
		}
		t, rerr := parseLichessRow(text, cols, ncols)
		if rerr == nil {
			if first, dup := idLine[t.Hidden[HiddenPuzzleID]]; dup {
				rerr = &rowError{"PuzzleId", fmt.Sprintf("duplicate of line %d", first)}
			} else {
				idLine[t.Hidden[HiddenPuzzleID]] = line
			}
		}
		if rerr != nil {
			return &data.BadLine{Field: rerr.field, Reason: rerr.reason}
		}
		if want != nil && !hasTheme(t, want) {
			dropped++
			return nil
		}
		tasks = append(tasks, t)
		return nil
	})
	if err != nil {
		return nil, bad, fmt.Errorf("chess: import lichess: %w", err)
	}
	if len(tasks) == 0 && want != nil {
		return nil, bad, fmt.Errorf("chess: import lichess: %s has no usable puzzles with the themes %s (%d others)", path, strings.Join(opts.Themes, ","), dropped)
	}
	if len(tasks) == 0 {
		return nil, bad, fmt.Errorf("chess: import lichess: %s has no usable puzzles", path)
	}
	splits, err := data.SplitTasks(tasks, opts.Seed, data.ImportSizes(opts.Sizes, len(tasks)))
	if err != nil {
		return nil, bad, fmt.Errorf("chess: import lichess %s: %w", path, err)
	}
	d, err := newDomain(splits)
	if err != nil {
		return nil, bad, fmt.Errorf("chess: import lichess %s: %w", path, err)
	}
	return d, bad, nil
}

// isLichessHeader reports whether a first line names columns rather than
// holding a puzzle: it has both a PuzzleId and a Moves column.
func isLichessHeader(text string) bool {
	rec, err := csv.NewReader(strings.NewReader(text)).Read()
	if err != nil {
		return strings.HasPrefix(text, "PuzzleId")
	}
	hasID, hasMoves := false, false
	for _, f := range rec {
		hasID = hasID || strings.TrimSpace(f) == "PuzzleId"
		hasMoves = hasMoves || strings.TrimSpace(f) == "Moves"
	}
	return hasID && hasMoves || strings.HasPrefix(text, "PuzzleId")
}

// lichessHeader maps column names to their index.
func lichessHeader(text string) (map[string]int, int, error) {
	rec, err := csv.NewReader(strings.NewReader(text)).Read()
	if err != nil {
		return nil, 0, err
	}
	cols := map[string]int{}
	for i, name := range rec {
		name = strings.TrimSpace(name)
		if _, dup := cols[name]; dup {
			return nil, 0, fmt.Errorf("column %q given twice", name)
		}
		cols[name] = i
	}
	for _, name := range lichessRequired {
		if _, ok := cols[name]; !ok {
			return nil, 0, fmt.Errorf("column %q missing (want %s)", name, strings.Join(lichessColumns, ","))
		}
	}
	return cols, len(rec), nil
}

// parseLichessRow turns one CSV row into a task. cols maps column names to
// indexes (nil: the standard order without a header, 9 or 10 fields).
func parseLichessRow(text string, cols map[string]int, ncols int) (data.Task, *rowError) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err != nil {
		return data.Task{}, &rowError{"row", fmt.Sprintf("not valid CSV: %v", err)}
	}
	if cols == nil {
		if len(rec) != 10 && len(rec) != 9 {
			return data.Task{}, &rowError{"row", fmt.Sprintf("%d fields, want 10 (%s) or 9 without OpeningTags", len(rec), strings.Join(lichessColumns, ","))}
		}
		cols = map[string]int{}
		for i, name := range lichessColumns[:len(rec)] {
			cols[name] = i
		}
	} else if len(rec) != ncols {
		return data.Task{}, &rowError{"row", fmt.Sprintf("%d fields, the header has %d", len(rec), ncols)}
	}
	get := func(name string) string {
		if i, ok := cols[name]; ok {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	id := get("PuzzleId")
	if id == "" || strings.ContainsAny(id, " \t/") {
		return data.Task{}, &rowError{"PuzzleId", fmt.Sprintf("want a non-empty id without spaces or slashes, got %q", id)}
	}
	for _, name := range []string{"Rating", "RatingDeviation", "Popularity", "NbPlays"} {
		if _, err := strconv.Atoi(get(name)); err != nil {
			return data.Task{}, &rowError{name, fmt.Sprintf("want an integer, got %q", get(name))}
		}
	}
	pos, err := ParseFEN(get("FEN"))
	if err != nil {
		return data.Task{}, &rowError{"FEN", err.Error()}
	}
	moves := strings.Fields(get("Moves"))
	if len(moves) < 2 || len(moves)%2 != 0 {
		return data.Task{}, &rowError{"Moves", fmt.Sprintf("%d moves, want an even number >= 2 (the opponent's trigger move, then the solver's line ending with a solver move)", len(moves))}
	}
	p := pos
	var after *Position
	for i, mv := range moves {
		m, err := p.ParseMove(mv)
		if err != nil {
			return data.Task{}, &rowError{"Moves", fmt.Sprintf("move %d: %v", i+1, err)}
		}
		p = p.Play(m)
		if i == 0 {
			after = p
		}
		if i < len(moves)-1 && p.Checkmated() {
			return data.Task{}, &rowError{"Moves", fmt.Sprintf("move %d (%s) is already mate, but the line goes on", i+1, mv)}
		}
	}
	themes := strings.Fields(get("Themes"))
	line := moves[1:]
	solverMoves := (len(line) + 1) / 2
	mate, rerr := mateDepth(themes, solverMoves)
	if rerr != nil {
		return data.Task{}, rerr
	}
	if mate > 0 && !p.Checkmated() {
		return data.Task{}, &rowError{"Moves", "the themes say mate but the listed line does not end in mate"}
	}
	goal := fmt.Sprintf("find the best move (%d moves)", solverMoves)
	if solverMoves == 1 {
		goal = "find the best move"
	}
	if mate > 0 {
		goal = fmt.Sprintf("mate in %d", mate)
	}
	solver := make([]string, 0, solverMoves)
	for i := 0; i < len(line); i += 2 {
		solver = append(solver, line[i])
	}
	return data.Task{
		ID:      "lichess-" + id,
		Domain:  Name,
		Problem: problemText(after, goal) + "\nOpponent's last move: " + moves[0],
		Answer:  strings.Join(solver, " "),
		Level:   solverMoves,
		Hidden: map[string]string{
			HiddenStartFEN:   after.FEN(),
			HiddenLine:       strings.Join(line, " "),
			HiddenMate:       strconv.Itoa(mate),
			HiddenSource:     "lichess",
			HiddenLichessFEN: pos.FEN(),
			HiddenTrigger:    moves[0],
			HiddenPuzzleID:   id,
			HiddenRating:     get("Rating"),
			HiddenThemes:     strings.Join(themes, " "),
		},
	}, nil
}

// mateDepth reads the mate depth from the themes: the solver's move count
// for a mate theme (checked against mateInN below 5; mateIn5 means five or
// more), 0 when no mate theme is present.
func mateDepth(themes []string, solverMoves int) (int, *rowError) {
	isMate, n := false, 0
	for _, th := range themes {
		if th == "mate" {
			isMate = true
			continue
		}
		rest, ok := strings.CutPrefix(th, "mateIn")
		if !ok {
			continue
		}
		k, err := strconv.Atoi(rest)
		if err != nil || k < 1 || k > 5 {
			return 0, &rowError{"Themes", fmt.Sprintf("unknown mate theme %q (want mateIn1 ... mateIn5)", th)}
		}
		if n != 0 && n != k {
			return 0, &rowError{"Themes", fmt.Sprintf("two mate depths, mateIn%d and mateIn%d", n, k)}
		}
		isMate, n = true, k
	}
	if !isMate {
		return 0, nil
	}
	if n != 0 && (n < 5 && solverMoves != n || n == 5 && solverMoves < 5) {
		return 0, &rowError{"Themes", fmt.Sprintf("mateIn%d, but Moves lists %d solver moves", n, solverMoves)}
	}
	return solverMoves, nil
}
