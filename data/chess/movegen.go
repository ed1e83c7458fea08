package chess

import (
	"fmt"
	"slices"
	"strings"
)

// Move is a move: from and to squares and a promotion piece type (0 when
// none). Castling is the king's two-square move, as in UCI; play works out
// castling, en passant and double pushes from the board.
type Move uint16

func mkMove(from, to, promo int) Move { return Move(from | to<<6 | promo<<12) }
func (m Move) from() int              { return int(m & 63) }
func (m Move) to() int                { return int(m>>6) & 63 }
func (m Move) promo() int             { return int(m>>12) & 7 }

// UCI renders the move as e2e4, e7e8q or e1g1.
func (m Move) UCI() string {
	s := squareName(m.from()) + squareName(m.to())
	if pr := m.promo(); pr != 0 {
		s += string(pieceLetters[pr])
	}
	return s
}

// Direction offsets on the 0..63 board; the tables below stop rays at the
// board's edge so no wrap-around check is needed while generating.
var (
	dirDelta = [8][2]int{{0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1}, {-1, 1}, {1, -1}, {-1, -1}} // (file, rank)
	rays     [64][8][]int8
	knightTo [64][]int8
	kingTo   [64][]int8
	// pawnHits[c][sq] are the squares a pawn of colour c on sq attacks.
	pawnHits [2][64][]int8
)

func init() {
	onBoard := func(f, r int) bool { return f >= 0 && f < 8 && r >= 0 && r < 8 }
	for sq := 0; sq < 64; sq++ {
		f, r := fileOf(sq), rankOf(sq)
		for d, dd := range dirDelta {
			for nf, nr := f+dd[0], r+dd[1]; onBoard(nf, nr); nf, nr = nf+dd[0], nr+dd[1] {
				rays[sq][d] = append(rays[sq][d], int8(nr*8+nf))
			}
			if onBoard(f+dd[0], r+dd[1]) {
				kingTo[sq] = append(kingTo[sq], int8((r+dd[1])*8+f+dd[0]))
			}
		}
		for _, dd := range [8][2]int{{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}} {
			if onBoard(f+dd[0], r+dd[1]) {
				knightTo[sq] = append(knightTo[sq], int8((r+dd[1])*8+f+dd[0]))
			}
		}
		for c, dr := range [2]int{1, -1} {
			for _, df := range [2]int{-1, 1} {
				if onBoard(f+df, r+dr) {
					pawnHits[c][sq] = append(pawnHits[c][sq], int8((r+dr)*8+f+df))
				}
			}
		}
	}
}

// attacked reports whether colour by attacks sq.
func (p *Position) attacked(sq, by int) bool {
	// A pawn of colour by attacks sq from exactly the squares that a pawn of
	// the other colour on sq would attack.
	for _, s := range pawnHits[by^1][sq] {
		if p.board[s] == mkPiece(by, pawn) {
			return true
		}
	}
	for _, s := range knightTo[sq] {
		if p.board[s] == mkPiece(by, knight) {
			return true
		}
	}
	for _, s := range kingTo[sq] {
		if p.board[s] == mkPiece(by, king) {
			return true
		}
	}
	straight, diag := mkPiece(by, rook), mkPiece(by, bishop)
	q := mkPiece(by, queen)
	for d := 0; d < 8; d++ {
		slider := straight
		if d >= 4 {
			slider = diag
		}
		for _, s := range rays[sq][d] {
			pc := p.board[s]
			if pc == 0 {
				continue
			}
			if pc == slider || pc == q {
				return true
			}
			break
		}
	}
	return false
}

// inCheck reports whether the side to move is in check.
func (p *Position) inCheck() bool {
	return p.attacked(int(p.kings[p.turn]), int(p.turn^1))
}

// pseudo appends the side to move's pseudo-legal moves to dst: every move
// the pieces can make, ignoring whether it leaves the own king in check.
// Castling is generated only when it is fully legal apart from the king's
// destination square, which the legality filter checks like any move.
func (p *Position) pseudo(dst []Move) []Move {
	us := int(p.turn)
	them := us ^ 1
	for sq := 0; sq < 64; sq++ {
		pc := p.board[sq]
		if pc == 0 || pieceColor(pc) != us {
			continue
		}
		switch pieceType(pc) {
		case pawn:
			dst = p.pawnMoves(dst, sq, us)
		case knight:
			for _, t := range knightTo[sq] {
				if tp := p.board[t]; tp == 0 || pieceColor(tp) == them {
					dst = append(dst, mkMove(sq, int(t), 0))
				}
			}
		case king:
			for _, t := range kingTo[sq] {
				if tp := p.board[t]; tp == 0 || pieceColor(tp) == them {
					dst = append(dst, mkMove(sq, int(t), 0))
				}
			}
			dst = p.castleMoves(dst, us)
		default:
			lo, hi := 0, 8
			switch pieceType(pc) {
			case rook:
				hi = 4
			case bishop:
				lo = 4
			}
			for d := lo; d < hi; d++ {
				for _, t := range rays[sq][d] {
					tp := p.board[t]
					if tp == 0 {
						dst = append(dst, mkMove(sq, int(t), 0))
						continue
					}
					if pieceColor(tp) == them {
						dst = append(dst, mkMove(sq, int(t), 0))
					}
					break
				}
			}
		}
	}
	return dst
}

func (p *Position) pawnMoves(dst []Move, sq, us int) []Move {
	fwd, startRank, lastRank := 8, 1, 7
	if us == black {
		fwd, startRank, lastRank = -8, 6, 0
	}
	add := func(to int) {
		if rankOf(to) == lastRank {
			for _, pr := range [4]int{queen, rook, bishop, knight} {
				dst = append(dst, mkMove(sq, to, pr))
			}
			return
		}
		dst = append(dst, mkMove(sq, to, 0))
	}
	one := sq + fwd
	if p.board[one] == 0 {
		add(one)
		if rankOf(sq) == startRank && p.board[one+fwd] == 0 {
			dst = append(dst, mkMove(sq, one+fwd, 0))
		}
	}
	for _, t := range pawnHits[us][sq] {
		tp := p.board[t]
		if (tp != 0 && pieceColor(tp) != us) || int(t) == int(p.ep) {
			add(int(t))
		}
	}
	return dst
}

func (p *Position) castleMoves(dst []Move, us int) []Move {
	them := us ^ 1
	type side struct {
		bit               uint8
		kingSq, to, cross int
		empty             []int
	}
	sides := [2]side{{castleWK, sqE1, sqG1, sqF1, []int{sqF1, sqG1}}, {castleWQ, sqE1, sqC1, sqD1, []int{sqD1, sqC1, 1}}}
	if us == black {
		sides = [2]side{{castleBK, sqE8, sqG8, sqF8, []int{sqF8, sqG8}}, {castleBQ, sqE8, sqC8, sqD8, []int{sqD8, sqC8, 57}}}
	}
	for _, s := range sides {
		if p.castle&s.bit == 0 || int(p.kings[us]) != s.kingSq {
			continue
		}
		clear := true
		for _, e := range s.empty {
			clear = clear && p.board[e] == 0
		}
		if clear && !p.attacked(s.kingSq, them) && !p.attacked(s.cross, them) {
			dst = append(dst, mkMove(s.kingSq, s.to, 0))
		}
	}
	return dst
}

// play returns the position after m, which must be pseudo-legal here.
func (p *Position) play(m Move) Position {
	q := *p
	from, to := m.from(), m.to()
	pc := q.board[from]
	us := pieceColor(pc)
	captured := q.board[to]
	q.board[from] = 0
	q.board[to] = pc
	q.ep = noSq
	switch pieceType(pc) {
	case pawn:
		switch {
		case to == int(p.ep):
			// En passant: the captured pawn stands beside the mover.
			capSq := to - 8
			if us == black {
				capSq = to + 8
			}
			q.board[capSq] = 0
		case to-from == 16 || from-to == 16:
			q.ep = int8((from + to) / 2)
		case m.promo() != 0:
			q.board[to] = mkPiece(us, m.promo())
		}
	case king:
		q.kings[us] = int8(to)
		switch to - from {
		case 2:
			q.board[to-1], q.board[to+1] = q.board[to+1], 0
		case -2:
			q.board[to+1], q.board[to-2] = q.board[to-2], 0
		}
	}
	// A right is lost when the king or that rook leaves home or the rook is
	// captured there.
	q.castle &^= castleLoss[from] | castleLoss[to]
	if pieceType(pc) == pawn || captured != 0 {
		q.halfmove = 0
	} else {
		q.halfmove++
	}
	if us == black {
		q.fullmove++
	}
	q.turn ^= 1
	return q
}

var castleLoss = func() (t [64]uint8) {
	t[sqE1] = castleWK | castleWQ
	t[sqH1] = castleWK
	t[sqA1] = castleWQ
	t[sqE8] = castleBK | castleBQ
	t[sqH8] = castleBK
	t[sqA8] = castleBQ
	return t
}()

// legal reports whether the pseudo-legal move m keeps the mover's king safe,
// and returns the position after it.
func (p *Position) legal(m Move) (Position, bool) {
	q := p.play(m)
	return q, !q.attacked(int(q.kings[p.turn]), int(q.turn))
}

// LegalMoves appends the legal moves to dst in generation order.
func (p *Position) legalMoves(dst []Move) []Move {
	start := len(dst)
	dst = p.pseudo(dst)
	out := dst[:start]
	for _, m := range dst[start:] {
		if _, ok := p.legal(m); ok {
			out = append(out, m)
		}
	}
	return out
}

// hasLegalMove reports whether the side to move has any legal move; buf is
// scratch space.
func (p *Position) hasLegalMove(buf []Move) bool {
	// King moves first: they are the usual escapes from check, so a
	// position that is not mate is usually proved so by the first move.
	k := int(p.kings[p.turn])
	for _, t := range kingTo[k] {
		if tp := p.board[t]; tp == 0 || pieceColor(tp) != int(p.turn) {
			if _, ok := p.legal(mkMove(k, int(t), 0)); ok {
				return true
			}
		}
	}
	for _, m := range p.pseudo(buf[:0]) {
		if _, ok := p.legal(m); ok {
			return true
		}
	}
	return false
}

// LegalUCI lists the legal moves in UCI, sorted.
func (p *Position) LegalUCI() []string {
	ms := p.legalMoves(nil)
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.UCI()
	}
	slices.Sort(out)
	return out
}

// Checkmated reports whether the side to move is checkmated.
func (p *Position) Checkmated() bool {
	return p.inCheck() && !p.hasLegalMove(make([]Move, 0, 64))
}

// Stalemated reports whether the side to move has no legal move and is not
// in check.
func (p *Position) Stalemated() bool {
	return !p.inCheck() && !p.hasLegalMove(make([]Move, 0, 64))
}

// parseUCI checks the syntax of a UCI move (lower case, as UCI writes it).
func parseUCI(s string) (Move, error) {
	if len(s) != 4 && len(s) != 5 {
		return 0, fmt.Errorf("%q is not a UCI move: want 4 or 5 characters like e2e4 or e7e8q", s)
	}
	from, ok1 := parseSquare(s[0:2])
	to, ok2 := parseSquare(s[2:4])
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("%q is not a UCI move: want two squares like e2e4", s)
	}
	promo := 0
	if len(s) == 5 {
		promo = strings.IndexByte(" pnbrqk", s[4])
		if promo < knight || promo > queen {
			return 0, fmt.Errorf("%q is not a UCI move: promotion piece must be one of q, r, b, n", s)
		}
	}
	return mkMove(from, to, promo), nil
}

// ParseMove parses a UCI move and checks that it is legal here; the error
// says which of the two failed.
func (p *Position) ParseMove(s string) (Move, error) {
	m, err := parseUCI(s)
	if err != nil {
		return 0, err
	}
	for _, lm := range p.legalMoves(make([]Move, 0, 64)) {
		if lm == m {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%s is not a legal move for %s in %s", s, p.SideToMove(), p.FEN())
}

// Play returns the position after the legal move m.
func (p *Position) Play(m Move) *Position {
	q := p.play(m)
	return &q
}
