package chess

import (
	"fmt"
	"slices"
	"strings"
)

// What a player sees of a position: moves in SAN, the pieces each side
// has, and which pieces stand attacked. Everything here is read off the
// board by the rules alone; nothing searches, so nothing here can name a
// solution. In particular SAN's mate sign is never written: a mating move
// shows the check sign like any other check (see SAN).

var pieceNames = [7]string{"", "pawn", "knight", "bishop", "rook", "queen", "king"}

// SAN renders a legal move m of p in standard algebraic notation (Nf3,
// exd5, O-O, e8=Q, Rad1), with "+" when it gives check. A move that mates
// also shows "+", never "#": whether a check mates is what a puzzle asks,
// so the observation must not answer it.
func (p *Position) SAN(m Move) string {
	from, to := m.from(), m.to()
	pc := p.board[from]
	typ := pieceType(pc)
	var b strings.Builder
	switch {
	case typ == king && to-from == 2:
		b.WriteString("O-O")
	case typ == king && from-to == 2:
		b.WriteString("O-O-O")
	case typ == pawn:
		capture := fileOf(from) != fileOf(to)
		if capture {
			b.WriteByte(byte('a' + fileOf(from)))
			b.WriteByte('x')
		}
		b.WriteString(squareName(to))
		if pr := m.promo(); pr != 0 {
			b.WriteByte('=')
			b.WriteByte(pieceLetters[pr] - ('a' - 'A'))
		}
	default:
		b.WriteByte(pieceLetters[typ] - ('a' - 'A'))
		b.WriteString(p.disambiguation(m))
		if p.board[to] != 0 {
			b.WriteByte('x')
		}
		b.WriteString(squareName(to))
	}
	if q := p.play(m); q.inCheck() {
		b.WriteByte('+')
	}
	return b.String()
}

// disambiguation is the file, rank or square SAN adds when another piece
// of the same kind can legally move to the same square.
func (p *Position) disambiguation(m Move) string {
	from, to := m.from(), m.to()
	pc := p.board[from]
	sameFile, sameRank, others := false, false, false
	for _, o := range p.legalMoves(nil) {
		if o.to() != to || o.from() == from || p.board[o.from()] != pc {
			continue
		}
		others = true
		sameFile = sameFile || fileOf(o.from()) == fileOf(from)
		sameRank = sameRank || rankOf(o.from()) == rankOf(from)
	}
	switch {
	case !others:
		return ""
	case !sameFile:
		return squareName(from)[:1]
	case !sameRank:
		return squareName(from)[1:]
	default:
		return squareName(from)
	}
}

// LegalSAN lists the legal moves as SAN and UCI pairs, in the order of
// LegalUCI (sorted by UCI).
func (p *Position) LegalSAN() (san, uci []string) {
	ms := p.legalMoves(nil)
	slices.SortFunc(ms, func(a, b Move) int { return strings.Compare(a.UCI(), b.UCI()) })
	for _, m := range ms {
		san = append(san, p.SAN(m))
		uci = append(uci, m.UCI())
	}
	return san, uci
}

// CompactBoard draws the position as eight rows of eight characters, rank
// 8 first, each row after its rank number, white upper case, dots for
// empty squares, with the files below: Board without the spaces.
func (p *Position) CompactBoard() string {
	var b strings.Builder
	for rank := 7; rank >= 0; rank-- {
		b.WriteByte(byte('1' + rank))
		b.WriteByte(' ')
		for file := 0; file < 8; file++ {
			if pc := p.board[rank*8+file]; pc != 0 {
				b.WriteByte(pieceRune(pc))
			} else {
				b.WriteByte('.')
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("  abcdefgh")
	return b.String()
}

// pieceList is "king g1, rook f1, pawn g2" for one colour, in board order
// from a8 to h1.
func (p *Position) pieceList(color int) string {
	var out []string
	for rank := 7; rank >= 0; rank-- {
		for file := 0; file < 8; file++ {
			sq := rank*8 + file
			if pc := p.board[sq]; pc != 0 && pieceColor(pc) == color {
				out = append(out, pieceNames[pieceType(pc)]+" "+squareName(sq))
			}
		}
	}
	return strings.Join(out, ", ")
}

// attackers lists the squares of colour by's pieces that attack sq
// (x-rays not counted: a slider behind another piece does not attack).
func (p *Position) attackers(sq, by int) []int {
	var out []int
	for s := 0; s < 64; s++ {
		pc := p.board[s]
		if pc == 0 || pieceColor(pc) != by || s == sq {
			continue
		}
		if p.hits(s, sq) {
			out = append(out, s)
		}
	}
	return out
}

// hits reports whether the piece on from attacks to (pawns diagonally).
func (p *Position) hits(from, to int) bool {
	pc := p.board[from]
	switch pieceType(pc) {
	case pawn:
		return slices.Contains(pawnHits[pieceColor(pc)][from], int8(to))
	case knight:
		return slices.Contains(knightTo[from], int8(to))
	case king:
		return slices.Contains(kingTo[from], int8(to))
	}
	typ := pieceType(pc)
	for d := 0; d < 8; d++ {
		if d < 4 && typ == bishop || d >= 4 && typ == rook {
			continue
		}
		for _, s := range rays[from][d] {
			if int(s) == to {
				return true
			}
			if p.board[s] != 0 {
				break
			}
		}
	}
	return false
}

// AttackReport says, for each side, which of its pieces the other side
// attacks, by what, and how many own pieces defend each. It is the chess
// domain's "attacks" tool: board facts a player reads off the position,
// no search and no judgement of which move is best.
func (p *Position) AttackReport() string {
	var b strings.Builder
	for i, color := range []int{int(p.turn), int(p.turn ^ 1)} {
		if i > 0 {
			b.WriteByte('\n')
		}
		side := "White"
		if color == black {
			side = "Black"
		}
		var items []string
		for sq := 0; sq < 64; sq++ {
			pc := p.board[sq]
			if pc == 0 || pieceColor(pc) != color {
				continue
			}
			by := p.attackers(sq, color^1)
			if len(by) == 0 {
				continue
			}
			names := make([]string, len(by))
			for k, s := range by {
				names[k] = pieceNames[pieceType(p.board[s])] + " " + squareName(s)
			}
			def := len(p.attackers(sq, color))
			items = append(items, fmt.Sprintf("%s %s attacked by %s, defended %d", pieceNames[pieceType(pc)], squareName(sq), strings.Join(names, " and "), def))
		}
		if len(items) == 0 {
			fmt.Fprintf(&b, "%s pieces attacked: none", side)
			continue
		}
		fmt.Fprintf(&b, "%s pieces attacked: %s", side, strings.Join(items, "; "))
	}
	return b.String()
}

// SquareReport names the pieces of both sides that attack square sq.
func (p *Position) SquareReport(sq int) string {
	var parts []string
	for _, color := range []int{white, black} {
		side := "White"
		if color == black {
			side = "Black"
		}
		var names []string
		for _, s := range p.attackers(sq, color) {
			names = append(names, pieceNames[pieceType(p.board[s])]+" "+squareName(s))
		}
		if len(names) == 0 {
			names = []string{"nothing"}
		}
		parts = append(parts, side+": "+strings.Join(names, ", "))
	}
	on := "empty"
	if pc := p.board[sq]; pc != 0 {
		on = fmt.Sprintf("%s %s", map[int]string{white: "white", black: "black"}[pieceColor(pc)], pieceNames[pieceType(pc)])
	}
	return fmt.Sprintf("%s (%s) is attacked by %s", squareName(sq), on, strings.Join(parts, "; "))
}
