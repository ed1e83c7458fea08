package chess

import (
	"fmt"
	"strconv"
	"strings"
)

// Colours and piece types. A piece is colour<<3 | type, so that 0 is an
// empty square and both halves come back with a shift and a mask.
const (
	white = 0
	black = 1

	pawn   = 1
	knight = 2
	bishop = 3
	rook   = 4
	queen  = 5
	king   = 6
)

// Castling-right bits.
const (
	castleWK = 1 << iota
	castleWQ
	castleBK
	castleBQ
)

// Squares are 0..63 with a1 = 0, h1 = 7, a8 = 56, h8 = 63.
const (
	sqA1 = 0
	sqC1 = 2
	sqD1 = 3
	sqE1 = 4
	sqF1 = 5
	sqG1 = 6
	sqH1 = 7
	sqA8 = 56
	sqC8 = 58
	sqD8 = 59
	sqE8 = 60
	sqF8 = 61
	sqG8 = 62
	sqH8 = 63
	noSq = -1
)

func mkPiece(color, typ int) uint8 { return uint8(color<<3 | typ) }
func pieceColor(p uint8) int       { return int(p >> 3) }
func pieceType(p uint8) int        { return int(p & 7) }
func fileOf(sq int) int            { return sq & 7 }
func rankOf(sq int) int            { return sq >> 3 }

// Position is a chess position. It is a value: play returns a new one, so
// search needs no undo bookkeeping and a Position can be shared freely.
type Position struct {
	board    [64]uint8
	turn     uint8
	castle   uint8
	ep       int8 // en-passant target square, or noSq
	kings    [2]int8
	halfmove int
	fullmove int
}

const pieceLetters = " pnbrqk"

func pieceRune(p uint8) byte {
	c := pieceLetters[pieceType(p)]
	if pieceColor(p) == white {
		c -= 'a' - 'A'
	}
	return c
}

// squareName gives "e4" for square 28.
func squareName(sq int) string {
	return string([]byte{byte('a' + fileOf(sq)), byte('1' + rankOf(sq))})
}

// parseSquare reads "e4"; ok is false for anything else.
func parseSquare(s string) (int, bool) {
	if len(s) != 2 || s[0] < 'a' || s[0] > 'h' || s[1] < '1' || s[1] > '8' {
		return 0, false
	}
	return int(s[1]-'1')*8 + int(s[0]-'a'), true
}

// ParseFEN reads a position in Forsyth-Edwards notation. It accepts the
// six-field form and the four-field form (clocks default to 0 and 1), and
// rejects positions the rules cannot reach in ways that would break move
// generation: a missing or extra king, pawns on the first or last rank, the
// side not to move in check, castling rights without king and rook at home,
// and an en-passant square with no pawn that could just have moved there.
// Errors name the FEN field at fault.
func ParseFEN(fen string) (*Position, error) {
	f := strings.Fields(fen)
	if len(f) != 6 && len(f) != 4 {
		return nil, fmt.Errorf("chess: FEN %q: want 6 space-separated fields (or 4), got %d", fen, len(f))
	}
	p := &Position{ep: noSq, kings: [2]int8{noSq, noSq}, fullmove: 1}
	if err := p.parsePlacement(f[0]); err != nil {
		return nil, fmt.Errorf("chess: FEN %q: placement: %w", fen, err)
	}
	switch f[1] {
	case "w":
		p.turn = white
	case "b":
		p.turn = black
	default:
		return nil, fmt.Errorf("chess: FEN %q: side to move: want w or b, got %q", fen, f[1])
	}
	if err := p.parseCastling(f[2]); err != nil {
		return nil, fmt.Errorf("chess: FEN %q: castling: %w", fen, err)
	}
	if err := p.parseEnPassant(f[3]); err != nil {
		return nil, fmt.Errorf("chess: FEN %q: en passant: %w", fen, err)
	}
	if len(f) == 6 {
		hm, err := strconv.Atoi(f[4])
		if err != nil || hm < 0 || hm > 10000 {
			return nil, fmt.Errorf("chess: FEN %q: halfmove clock: want an integer in [0, 10000], got %q", fen, f[4])
		}
		fm, err := strconv.Atoi(f[5])
		if err != nil || fm < 1 || fm > 100000 {
			return nil, fmt.Errorf("chess: FEN %q: fullmove number: want an integer in [1, 100000], got %q", fen, f[5])
		}
		p.halfmove, p.fullmove = hm, fm
	}
	if p.attacked(int(p.kings[p.turn^1]), int(p.turn)) {
		return nil, fmt.Errorf("chess: FEN %q: placement: the side not to move is in check", fen)
	}
	return p, nil
}

func (p *Position) parsePlacement(s string) error {
	ranks := strings.Split(s, "/")
	if len(ranks) != 8 {
		return fmt.Errorf("want 8 ranks separated by '/', got %d", len(ranks))
	}
	var count [2][7]int
	for i, r := range ranks {
		rank := 7 - i
		file := 0
		for j := 0; j < len(r); j++ {
			c := r[j]
			if c >= '1' && c <= '8' {
				file += int(c - '0')
				if file > 8 {
					return fmt.Errorf("rank %d is longer than 8 squares", rank+1)
				}
				continue
			}
			if file >= 8 {
				return fmt.Errorf("rank %d is longer than 8 squares", rank+1)
			}
			typ := strings.IndexByte(pieceLetters, c|0x20)
			if typ <= 0 {
				return fmt.Errorf("rank %d: unknown piece letter %q", rank+1, c)
			}
			color := white
			if c >= 'a' {
				color = black
			}
			sq := rank*8 + file
			if typ == pawn && (rank == 0 || rank == 7) {
				return fmt.Errorf("pawn on %s (first or last rank)", squareName(sq))
			}
			p.board[sq] = mkPiece(color, typ)
			if typ == king {
				p.kings[color] = int8(sq)
			}
			count[color][typ]++
			file++
		}
		if file != 8 {
			return fmt.Errorf("rank %d has %d squares, want 8", rank+1, file)
		}
	}
	for c, name := range []string{"white", "black"} {
		if count[c][king] != 1 {
			return fmt.Errorf("%s has %d kings, want 1", name, count[c][king])
		}
		if count[c][pawn] > 8 {
			return fmt.Errorf("%s has %d pawns, want at most 8", name, count[c][pawn])
		}
		n := 0
		for _, k := range count[c] {
			n += k
		}
		if n > 16 {
			return fmt.Errorf("%s has %d pieces, want at most 16", name, n)
		}
	}
	return nil
}

func (p *Position) parseCastling(s string) error {
	if s == "-" {
		return nil
	}
	need := map[byte]struct {
		bit        uint8
		kingSq, rk int
		color      int
	}{
		'K': {castleWK, sqE1, sqH1, white},
		'Q': {castleWQ, sqE1, sqA1, white},
		'k': {castleBK, sqE8, sqH8, black},
		'q': {castleBQ, sqE8, sqA8, black},
	}
	for i := 0; i < len(s); i++ {
		n, ok := need[s[i]]
		if !ok {
			return fmt.Errorf("want a combination of KQkq or '-', got %q", s)
		}
		if p.castle&n.bit != 0 {
			return fmt.Errorf("right %q given twice", s[i])
		}
		if p.board[n.kingSq] != mkPiece(n.color, king) || p.board[n.rk] != mkPiece(n.color, rook) {
			return fmt.Errorf("right %q needs the king on %s and a rook on %s", s[i], squareName(n.kingSq), squareName(n.rk))
		}
		p.castle |= n.bit
	}
	return nil
}

func (p *Position) parseEnPassant(s string) error {
	if s == "-" {
		return nil
	}
	sq, ok := parseSquare(s)
	if !ok {
		return fmt.Errorf("want a square or '-', got %q", s)
	}
	// The pawn that just moved two squares stands in front of the target,
	// seen from the side that moved it, and both squares it crossed are empty.
	wantRank, pawnSq, fromSq, mover := 5, sq-8, sq+8, black
	if p.turn == black {
		wantRank, pawnSq, fromSq, mover = 2, sq+8, sq-8, white
	}
	if rankOf(sq) != wantRank {
		return fmt.Errorf("square %s is not on rank %d", s, wantRank+1)
	}
	if p.board[pawnSq] != mkPiece(mover, pawn) || p.board[sq] != 0 || p.board[fromSq] != 0 {
		return fmt.Errorf("square %s: no pawn can just have moved two squares past it", s)
	}
	p.ep = int8(sq)
	return nil
}

// FEN renders the position in six-field Forsyth-Edwards notation.
func (p *Position) FEN() string {
	var b strings.Builder
	p.writePlacement(&b)
	b.WriteString(" ")
	b.WriteString(p.stateFields())
	fmt.Fprintf(&b, " %d %d", p.halfmove, p.fullmove)
	return b.String()
}

// key is the position without its clocks: two FENs with the same key are
// the same puzzle.
func (p *Position) key() string {
	var b strings.Builder
	p.writePlacement(&b)
	b.WriteString(" ")
	b.WriteString(p.stateFields())
	return b.String()
}

func (p *Position) writePlacement(b *strings.Builder) {
	for rank := 7; rank >= 0; rank-- {
		empty := 0
		for file := 0; file < 8; file++ {
			pc := p.board[rank*8+file]
			if pc == 0 {
				empty++
				continue
			}
			if empty > 0 {
				b.WriteByte(byte('0' + empty))
				empty = 0
			}
			b.WriteByte(pieceRune(pc))
		}
		if empty > 0 {
			b.WriteByte(byte('0' + empty))
		}
		if rank > 0 {
			b.WriteByte('/')
		}
	}
}

func (p *Position) stateFields() string {
	side := "w"
	if p.turn == black {
		side = "b"
	}
	cr := ""
	for i, c := range "KQkq" {
		if p.castle&(1<<i) != 0 {
			cr += string(c)
		}
	}
	if cr == "" {
		cr = "-"
	}
	ep := "-"
	if p.ep != noSq {
		ep = squareName(int(p.ep))
	}
	return side + " " + cr + " " + ep
}

// SideToMove is "white" or "black".
func (p *Position) SideToMove() string {
	if p.turn == white {
		return "white"
	}
	return "black"
}

// Board draws the position as text, rank 8 at the top, white pieces in
// upper case, empty squares as dots, with file and rank labels.
func (p *Position) Board() string {
	var b strings.Builder
	for rank := 7; rank >= 0; rank-- {
		b.WriteByte(byte('1' + rank))
		for file := 0; file < 8; file++ {
			b.WriteByte(' ')
			if pc := p.board[rank*8+file]; pc != 0 {
				b.WriteByte(pieceRune(pc))
			} else {
				b.WriteByte('.')
			}
		}
		b.WriteByte('\n')
	}
	b.WriteString("  a b c d e f g h")
	return b.String()
}
