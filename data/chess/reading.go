package chess

import "fmt"

// Reading a board: what the rules say about each legal move, for a
// demonstrator that derives its move from the position alone (see
// core/pretrain). Nothing here is offered to a solver: harnesses run in a
// sandbox that cannot reach Go code, and observations carry none of it.

// MoveFact is what the rules say about one legal move.
type MoveFact struct {
	UCI, SAN string
	// Check: the move gives check. Replies: the opponent's legal replies
	// after it (a check with none is mate).
	Check   bool
	Replies int
	// Captured is the captured piece's value in pawns (0: no capture) and
	// Taken its name ("knight"), Mover the moving piece's value (the king
	// counts 100), Defended whether the opponent attacks the destination
	// square after the move.
	Captured, Mover int
	Taken           string
	Defended        bool
}

// pawnValues of the piece types in pawns; the king is never traded.
var pawnValues = [7]int{0, 1, 3, 3, 5, 9, 100}

// ReadMoves lists the facts of every legal move of the position fen, in
// UCI order.
func ReadMoves(fen string) ([]MoveFact, error) {
	p, err := ParseFEN(fen)
	if err != nil {
		return nil, fmt.Errorf("chess: read moves: %w", err)
	}
	var out []MoveFact
	buf := make([]Move, 0, 64)
	for _, m := range sortedLegal(p) {
		q := p.play(m)
		f := MoveFact{UCI: m.UCI(), SAN: p.SAN(m), Check: q.inCheck(), Mover: pawnValues[pieceType(p.board[m.from()])]}
		f.Replies = len(q.legalMoves(buf[:0]))
		if c := p.board[m.to()]; c != 0 {
			f.Captured, f.Taken = pawnValues[pieceType(c)], pieceNames[pieceType(c)]
		} else if pieceType(p.board[m.from()]) == pawn && fileOf(m.from()) != fileOf(m.to()) {
			f.Captured, f.Taken = 1, pieceNames[pawn] // en passant
		}
		f.Defended = q.attacked(m.to(), int(q.turn))
		out = append(out, f)
	}
	return out, nil
}

// ForcedMate returns the first move in UCI order after which the side to
// move in fen mates within n moves whatever the defence, by a node-bounded
// search (the verifier's budget); ok is false when there is none.
func ForcedMate(fen string, n int) (uci string, ok bool, err error) {
	p, err := ParseFEN(fen)
	if err != nil {
		return "", false, fmt.Errorf("chess: forced mate: %w", err)
	}
	m, d, err := newSearcher(goldNodeBudget).bestMate(p, n)
	if err != nil {
		return "", false, fmt.Errorf("chess: forced mate in %s: %w", fen, err)
	}
	if d == 0 {
		return "", false, nil
	}
	return m.UCI(), true, nil
}
