package chess

import (
	"fmt"
	"strings"

	"whale/data"
)

// Episode is one attempt at a chess puzzle. The solver moves; after every
// correct move that does not finish the puzzle the environment plays the
// defender's reply. A move is correct in a mate puzzle when a forced mate
// within the solver's remaining moves still exists after it, so every
// mating move counts; the defender then plays the listed reply while the
// game follows the listed line, and otherwise the reply that delays mate
// longest (the first in UCI order among equals). In a puzzle without a mate
// theme the solver must play the listed moves, except that a move that
// mates always wins.
//
// An unlisted move is proved forcing by a node-bounded search when at most
// maxVerifyMate solver moves remain (always, for generated puzzles). Deeper
// mates, and the rare position whose proof exceeds the budget, fall back to
// the listed line: there an unlisted move that does not mate at once is
// scored wrong.
type Episode struct {
	task     data.Task
	pz       *puzzle
	broken   error // the task itself is malformed
	pos      *Position
	played   []string
	onLine   bool
	turn     int
	done     bool
	final    data.StepResult
	searcher *searcher
}

var _ data.Episode = (*Episode)(nil)

// NewEpisode starts an episode of task t. A malformed task gives an
// episode that ends at the first step with reward 0 and says why; loaders
// (Builtin, ReadSplits, ImportLichess) reject such tasks first.
func NewEpisode(t data.Task) *Episode {
	e := &Episode{task: t, onLine: true}
	pz, err := parsePuzzle(t)
	if err != nil {
		e.broken = err
		e.pos, _ = ParseFEN(startFEN)
		return e
	}
	e.pz, e.pos = pz, pz.start
	return e
}

// solverPlayed counts the solver's moves so far.
func (e *Episode) solverPlayed() int { return (len(e.played) + 1) / 2 }

// movesLeft is how many solver moves the puzzle still allows.
func (e *Episode) movesLeft() int {
	if e.pz == nil {
		return 0
	}
	return e.pz.solverMoves() - e.solverPlayed()
}

func (e *Episode) goal() string {
	n := e.movesLeft()
	switch {
	case e.pz == nil:
		return "unavailable (malformed task)"
	case e.done:
		return "finished"
	case e.pz.mate > 0:
		return fmt.Sprintf("mate in %d", n)
	case n == 1:
		return "find the best move (1 move left)"
	default:
		return fmt.Sprintf("find the best move (%d moves left)", n)
	}
}

// Observe shows what a player sees: the side to move and the goal, the
// board as compact text (CompactBoard; Board in the fields), the last move (the opponent's, when known) in SAN, the
// moves played so far in UCI and the legal moves as SAN then UCI. SAN marks
// captures and checks as SAN does, but a mating move is marked as a check
// only (see Position.SAN). Fields also hold the FEN, the legal moves in
// UCI ("legal_moves") and SAN ("legal_san", the same order), the last move
// in SAN ("last_move", "" when none) and each side's pieces
// ("white_pieces", "black_pieces").
func (e *Episode) Observe() data.Observation {
	san, legal := e.pos.LegalSAN()
	if e.done || legal == nil {
		san, legal = []string{}, []string{}
	}
	played := append([]string{}, e.played...)
	last := e.lastMove()
	fields := map[string]any{
		"side_to_move": e.pos.SideToMove(),
		"fen":          e.pos.FEN(),
		"board":        e.pos.Board(),
		"moves_so_far": played,
		"legal_moves":  legal,
		"legal_san":    san,
		"last_move":    last,
		"white_pieces": e.pos.pieceList(white),
		"black_pieces": e.pos.pieceList(black),
		"goal":         e.goal(),
	}
	pairs := make([]string, len(legal))
	for i := range legal {
		pairs[i] = san[i] + " " + legal[i]
	}
	moves := "none"
	if len(pairs) > 0 {
		moves = strings.Join(pairs, ", ")
	}
	var b strings.Builder
	side := e.pos.SideToMove()
	fmt.Fprintf(&b, "%s to move: %s.\n", strings.ToUpper(side[:1])+side[1:], e.goal())
	fmt.Fprintf(&b, "Board (White upper case, Black lower case):\n%s\n", e.pos.CompactBoard())
	if last != "" {
		fmt.Fprintf(&b, "Last move: %s\n", last)
	}
	fmt.Fprintf(&b, "Moves so far: %s\n", listOrNone(played))
	fmt.Fprintf(&b, "Legal moves (SAN UCI): %s", moves)
	return data.Observation{Text: b.String(), Fields: fields, Turn: e.turn}
}

// lastMove is the opponent's last move in SAN with its colour and piece,
// as "Black Nf6 (knight)": the defender's reply within the episode, or a
// lichess puzzle's trigger move before it; "" when neither is known.
func (e *Episode) lastMove() string {
	if e.pz == nil {
		return ""
	}
	var before *Position
	var mv string
	switch {
	case len(e.played) >= 2 && len(e.played)%2 == 0:
		before = e.pz.start
		for _, u := range e.played[:len(e.played)-1] {
			m, err := before.ParseMove(u)
			if err != nil {
				return ""
			}
			before = before.Play(m)
		}
		mv = e.played[len(e.played)-1]
	case len(e.played) == 0 && e.task.Hidden[HiddenLichessFEN] != "":
		p, err := ParseFEN(e.task.Hidden[HiddenLichessFEN])
		if err != nil {
			return ""
		}
		before, mv = p, e.task.Hidden[HiddenTrigger]
	default:
		return ""
	}
	m, err := before.ParseMove(mv)
	if err != nil {
		return ""
	}
	side := strings.ToUpper(before.SideToMove()[:1]) + before.SideToMove()[1:]
	return fmt.Sprintf("%s %s (%s)", side, before.SAN(m), pieceNames[pieceType(before.board[m.from()])])
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, " ")
}

// Step plays the solver's move (ActMove, or ActAnswer holding a UCI move).
func (e *Episode) Step(a data.Action) data.StepResult {
	if e.done {
		return e.final
	}
	e.turn++
	if e.broken != nil {
		return e.finish(0, data.FailInvalid, fmt.Sprintf("chess: malformed task: %v", e.broken))
	}
	switch a.Kind {
	case data.ActMove, data.ActAnswer:
	case data.ActTool:
		if a.Tool != AttacksTool {
			return data.StepResult{
				Obs:      e.Observe(),
				Feedback: fmt.Sprintf("unknown tool %q; the tools are: %s", a.Tool, AttacksTool),
				Failure:  data.FailToolError,
			}
		}
		out, err := attacksOn(e.pos, a.Args)
		if err != nil {
			return data.StepResult{Obs: e.Observe(), Feedback: err.Error(), Failure: data.FailToolError}
		}
		return data.StepResult{Obs: e.Observe(), ToolResult: out}
	default:
		return e.finish(0, data.FailInvalid, fmt.Sprintf("unknown action kind %q; play a move in UCI, like e2e4", a.Kind))
	}
	text := strings.ToLower(strings.TrimSpace(a.Text))
	m, err := e.pos.ParseMove(text)
	if err != nil {
		if _, synErr := parseUCI(text); synErr != nil {
			return e.finish(0, data.FailInvalid, fmt.Sprintf("move %q is not UCI (want from and to squares, like e2e4 or e7e8q)", a.Text))
		}
		return e.finish(0, data.FailInvalid, fmt.Sprintf("move %s is illegal here", text))
	}
	idx := len(e.played)
	listed := e.onLine && idx < len(e.pz.line) && e.pz.line[idx] == text
	left := e.movesLeft() // before this move
	after := e.pos.play(m)
	e.pos = &after
	e.played = append(e.played, text)
	e.onLine = listed
	if after.Checkmated() {
		return e.finish(1, data.FailNone, fmt.Sprintf("%s is checkmate", text))
	}
	if left <= 1 {
		if e.pz.mate > 0 {
			return e.finish(0, data.FailWrong, fmt.Sprintf("%s does not mate", text))
		}
		if listed {
			return e.finish(1, data.FailNone, fmt.Sprintf("%s completes the puzzle", text))
		}
		return e.finish(0, data.FailWrong, fmt.Sprintf("%s is not the best move", text))
	}
	var reply string
	switch {
	case listed:
		reply = e.pz.line[idx+1]
	case e.pz.mate > 0 && left <= maxVerifyMate:
		r, ok, why := e.defend(&after, left-1)
		if !ok {
			return e.finish(0, data.FailWrong, fmt.Sprintf("%s %s", text, why))
		}
		reply = r
	case e.pz.mate > 0:
		return e.finish(0, data.FailWrong, fmt.Sprintf("%s is not the listed move and does not mate at once", text))
	default:
		return e.finish(0, data.FailWrong, fmt.Sprintf("%s is not the best move", text))
	}
	rm, err := e.pos.ParseMove(reply)
	if err != nil {
		// The line was checked when the task was loaded and a searched
		// reply comes from the legal moves.
		panic(fmt.Sprintf("chess: defender reply %s illegal in %s: %v", reply, e.pos.FEN(), err))
	}
	next := e.pos.play(rm)
	e.pos = &next
	e.played = append(e.played, reply)
	return data.StepResult{
		Obs:      e.Observe(),
		Feedback: fmt.Sprintf("You played %s. The opponent replied %s.", text, reply),
	}
}

// defend proves that after the solver's unlisted move the attacker still
// mates within n whatever the defender does, and returns the defender's
// longest-resisting reply. ok is false (with the reason) when the move
// does not force mate in time or the proof exceeded its budget.
func (e *Episode) defend(after *Position, n int) (reply string, ok bool, why string) {
	if e.searcher == nil {
		e.searcher = newSearcher(verifyNodeBudget)
	}
	s := e.searcher
	s.nodes, s.aborted = 0, false
	forced, err := s.forces(after, n)
	if err != nil {
		return "", false, "is not the listed move and could not be proved to force mate within the search budget"
	}
	if !forced {
		return "", false, fmt.Sprintf("does not force mate in %d more", n)
	}
	r, _, err := s.longestDefence(after, n)
	if err != nil {
		return "", false, "is not the listed move and the defence could not be searched within the budget"
	}
	return r.UCI(), true, ""
}

func (e *Episode) finish(reward float64, fail data.FailureKind, feedback string) data.StepResult {
	e.done = true
	e.final = data.StepResult{Obs: e.Observe(), Feedback: feedback, Done: true, Reward: reward, Failure: fail}
	return e.final
}

// GoldAction returns a perfect solver's move from obs in task t: the listed
// move while the moves so far follow the listed line, otherwise the first
// move in UCI order that keeps the fastest forced mate within the moves
// left.
func GoldAction(t data.Task, obs data.Observation) (data.Action, error) {
	pz, err := parsePuzzle(t)
	if err != nil {
		return data.Action{}, fmt.Errorf("chess: gold action: %w", err)
	}
	played, err := stringsField(obs.Fields, "moves_so_far")
	if err != nil {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s: %w", t.ID, err)
	}
	if len(played)%2 != 0 {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s: %d moves so far: it is not the solver's turn", t.ID, len(played))
	}
	onLine := len(played) < len(pz.line)
	for i := 0; onLine && i < len(played); i++ {
		onLine = played[i] == pz.line[i]
	}
	if onLine {
		return data.Action{Kind: data.ActMove, Text: pz.line[len(played)]}, nil
	}
	if pz.mate == 0 {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s: the game left the listed line of a puzzle without a mate theme", t.ID)
	}
	fen, _ := obs.Fields["fen"].(string)
	p, err := ParseFEN(fen)
	if err != nil {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s: observation field fen: %w", t.ID, err)
	}
	left := pz.mate - len(played)/2
	if left < 1 {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s: no solver moves left", t.ID)
	}
	m, d, err := newSearcher(goldNodeBudget).bestMate(p, left)
	if err != nil {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s in %s: %w", t.ID, fen, err)
	}
	if d == 0 {
		return data.Action{}, fmt.Errorf("chess: gold action for task %s: no mate within %d moves in %s", t.ID, left, fen)
	}
	return data.Action{Kind: data.ActMove, Text: m.UCI()}, nil
}

// stringsField reads a []string field that may have been through JSON
// (and so arrive as []any).
func stringsField(f map[string]any, key string) ([]string, error) {
	switch v := f[key].(type) {
	case []string:
		return v, nil
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("observation field %s: element %d is %T, want a string", key, i, x)
			}
			out[i] = s
		}
		return out, nil
	case nil:
		return nil, fmt.Errorf("observation field %s missing", key)
	default:
		return nil, fmt.Errorf("observation field %s is %T, want a list of strings", key, v)
	}
}
