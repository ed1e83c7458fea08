package chess

import (
	"fmt"
	"strconv"
	"strings"

	"whale/data"
)

// Name is the domain's name.
const Name = "chess"

// Keys of Task.Hidden. Every chess task has the first three.
const (
	// HiddenStartFEN is the position the solver moves from first.
	HiddenStartFEN = "start_fen"
	// HiddenLine is the listed line from the start position in UCI, space
	// separated: solver, defender, solver, ..., ending with a solver move.
	HiddenLine = "line"
	// HiddenMate is the mate depth in solver moves ("2" for a mate in 2),
	// or "0" for a puzzle without a mate theme, which must be solved by
	// playing the listed moves.
	HiddenMate = "mate"
	// HiddenSource says where the task came from; HiddenSeed is the
	// generator's seed, for generated tasks.
	HiddenSource = "source"
	HiddenSeed   = "seed"
	// Lichess only: the puzzle's own FEN (before the opponent's trigger
	// move), the trigger move, the puzzle id, rating and themes.
	HiddenLichessFEN = "lichess_fen"
	HiddenTrigger    = "trigger"
	HiddenPuzzleID   = "puzzle_id"
	HiddenRating     = "rating"
	HiddenThemes     = "themes"
)

// Search budgets, in positions visited. They bound the verifier's work on
// a solver's unlisted move and the gold solver's search after one; see
// episode.go for what happens when one runs out.
const (
	verifyNodeBudget = 4_000_000
	goldNodeBudget   = 4_000_000
	// maxVerifyMate is the deepest remaining mate (in solver moves, counted
	// before the solver's move) that the verifier proves by search when a
	// solver leaves the listed line. Deeper lichess mates fall back to the
	// listed line: an unlisted move scores only if it mates at once.
	maxVerifyMate = 3
)

// builtinMaxTurns is the turn budget for the built-in puzzles (mates in 1
// and 2, hanging pieces): two moves for a mate in 2 plus one turn of slack for a stray step that
// does not end the episode (a tool call, which chess answers with a
// tool_error). A wrong or illegal move ends the episode, so more slack would
// never be used.
const builtinMaxTurns = 3

// Domain is a set of chess puzzles. Builtin and ImportLichess make one.
type Domain struct {
	splits   map[string][]data.Task
	maxTurns int
}

var _ data.Domain = (*Domain)(nil)

// newDomain checks every task and sizes the turn budget to the longest
// puzzle: its solver moves plus one turn of slack.
func newDomain(splits map[string][]data.Task) (*Domain, error) {
	d := &Domain{splits: map[string][]data.Task{}, maxTurns: builtinMaxTurns}
	for _, name := range data.Splits {
		for _, t := range splits[name] {
			pz, err := parsePuzzle(t)
			if err != nil {
				return nil, fmt.Errorf("chess: split %s: %w", name, err)
			}
			d.maxTurns = max(d.maxTurns, pz.solverMoves()+1)
		}
		d.splits[name] = splits[name]
	}
	for name := range splits {
		if _, ok := d.splits[name]; !ok {
			return nil, fmt.Errorf("chess: unknown split %q (want one of %v)", name, data.Splits)
		}
	}
	return d, nil
}

func (d *Domain) Name() string { return Name }

func (d *Domain) Tasks(split string) ([]data.Task, error) {
	ts, ok := d.splits[split]
	if !ok {
		return nil, fmt.Errorf("chess: unknown split %q (want one of %v)", split, data.Splits)
	}
	return ts, nil
}

// Tools is the attacks tool only: board facts (which pieces stand
// attacked, by what, how often defended), never a search or an engine.
func (d *Domain) Tools() []data.Tool { return []data.Tool{attacksTool{}} }

// AttacksTool is the name of the chess domain's one tool.
const AttacksTool = "attacks"

// attacksTool reports attacked pieces. Inside an episode it reads the
// episode's position and its argument is empty (every attacked piece of
// both sides) or a square ("e4": what attacks it); called on its own its
// argument starts with a FEN, then optionally "|" and a square.
type attacksTool struct{}

func (attacksTool) Name() string { return AttacksTool }
func (attacksTool) Description() string {
	return "attacks: which pieces of each side stand attacked, by what, and how often defended; or, given a square like e4, what attacks it"
}

func (attacksTool) Call(args string) (string, error) {
	fen, sq, _ := strings.Cut(args, "|")
	p, err := ParseFEN(strings.TrimSpace(fen))
	if err != nil {
		return "", fmt.Errorf("chess: attacks: %w", err)
	}
	return attacksOn(p, sq)
}

// attacksOn is the attacks tool on position p with argument args (empty,
// "all", or a square).
func attacksOn(p *Position, args string) (string, error) {
	args = strings.TrimSpace(args)
	if args == "" || strings.EqualFold(args, "all") {
		return p.AttackReport(), nil
	}
	sq, ok := parseSquare(strings.ToLower(args))
	if !ok {
		return "", fmt.Errorf("chess: attacks: want no argument (every attacked piece) or a square like e4, got %q", args)
	}
	return p.SquareReport(sq), nil
}

// DefaultMaxTurns is 3 for the built-in mate-in-1/2 puzzles (see
// builtinMaxTurns); an imported domain with longer puzzles gets the longest
// puzzle's solver moves plus one.
func (d *Domain) DefaultMaxTurns() int { return d.maxTurns }

func (d *Domain) NewEpisode(t data.Task) data.Episode { return NewEpisode(t) }

// GoldAction returns the listed move while the game follows the listed
// line, and otherwise (after an unlisted but still forcing solver move)
// the first move in UCI order that keeps the fastest forced mate.
func (d *Domain) GoldAction(t data.Task, obs data.Observation) (data.Action, error) {
	return GoldAction(t, obs)
}

// puzzle is a task's hidden part, parsed and checked.
type puzzle struct {
	start *Position
	line  []string
	mate  int
}

func (pz *puzzle) solverMoves() int { return (len(pz.line) + 1) / 2 }

// parsePuzzle reads and checks a task's hidden fields: the start FEN
// parses, every move of the line is legal in turn, the line ends with a
// solver move, and a mate puzzle's line has mate-depth solver moves and
// ends in mate.
func parsePuzzle(t data.Task) (*puzzle, error) {
	fen, ok := t.Hidden[HiddenStartFEN]
	if !ok {
		return nil, fmt.Errorf("task %s: hidden field %s missing", t.ID, HiddenStartFEN)
	}
	start, err := ParseFEN(fen)
	if err != nil {
		return nil, fmt.Errorf("task %s: hidden field %s: %w", t.ID, HiddenStartFEN, err)
	}
	line := strings.Fields(t.Hidden[HiddenLine])
	if len(line)%2 != 1 {
		return nil, fmt.Errorf("task %s: hidden field %s: %d moves, want an odd number (the line ends with a solver move)", t.ID, HiddenLine, len(line))
	}
	mate, err := strconv.Atoi(t.Hidden[HiddenMate])
	if err != nil || mate < 0 {
		return nil, fmt.Errorf("task %s: hidden field %s: want a mate depth >= 0, got %q", t.ID, HiddenMate, t.Hidden[HiddenMate])
	}
	pz := &puzzle{start: start, line: line, mate: mate}
	if mate > 0 && pz.solverMoves() != mate {
		return nil, fmt.Errorf("task %s: hidden field %s: %d solver moves for a mate in %d", t.ID, HiddenLine, pz.solverMoves(), mate)
	}
	p := start
	for i, mv := range line {
		m, err := p.ParseMove(mv)
		if err != nil {
			return nil, fmt.Errorf("task %s: hidden field %s: move %d: %w", t.ID, HiddenLine, i+1, err)
		}
		p = p.Play(m)
	}
	if mate > 0 && !p.Checkmated() {
		return nil, fmt.Errorf("task %s: hidden field %s: the line does not end in mate", t.ID, HiddenLine)
	}
	return pz, nil
}

// ValidateTask checks that a task is a well-formed chess puzzle whose
// listed line is legal (and, for a mate puzzle, ends in mate).
func ValidateTask(t data.Task) error {
	_, err := parsePuzzle(t)
	return err
}
