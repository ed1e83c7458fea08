package chess

import (
	"math/rand/v2"
	"slices"
	"testing"

	lib "github.com/corentings/chess/v2"
)

// Perft positions from the chess-programming literature: between them they
// exercise castling through and out of check, en passant (also the pinned
// kind), promotions with and without capture, and discovered checks.
var perftCases = []struct {
	name  string
	fen   string
	depth int
	nodes int // the published count at depth
}{
	{"start", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", 3, 8902},
	{"kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 3, 97862},
	{"endgame-ep", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 4, 43238},
	{"promotions", "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 3, 9467},
	{"mirrored-castle", "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 3, 62379},
	{"ep-check", "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1", 4, 0},
}

func perft(p *Position, depth int) int {
	if depth == 0 {
		return 1
	}
	n := 0
	for _, m := range p.legalMoves(nil) {
		q := p.play(m)
		n += perft(&q, depth-1)
	}
	return n
}

func libPosition(t testing.TB, fen string) *lib.Position {
	t.Helper()
	opt, err := lib.FEN(fen)
	if err != nil {
		t.Fatalf("library rejects %s: %v", fen, err)
	}
	return lib.NewGame(opt).Position()
}

func libPerft(p *lib.Position, depth int) int {
	if depth == 0 {
		return 1
	}
	n := 0
	for _, m := range p.ValidMoves() {
		n += libPerft(p.Update(&m), depth-1)
	}
	return n
}

func TestPerftAgainstLibrary(t *testing.T) {
	for _, c := range perftCases {
		p, err := ParseFEN(c.fen)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := perft(p, c.depth)
		if c.nodes != 0 && got != c.nodes {
			t.Errorf("%s: perft(%d) = %d, published %d", c.name, c.depth, got, c.nodes)
		}
		// The library is much slower: compare one ply less, and every
		// subtree of the root so a mismatch names the move.
		lp := libPosition(t, c.fen)
		want := map[string]int{}
		for _, m := range lp.ValidMoves() {
			want[m.String()] = libPerft(lp.Update(&m), c.depth-2)
		}
		for _, m := range p.legalMoves(nil) {
			q := p.play(m)
			if n := perft(&q, c.depth-2); n != want[m.UCI()] {
				t.Errorf("%s: after %s perft(%d) = %d, library %d", c.name, m.UCI(), c.depth-2, n, want[m.UCI()])
			}
			delete(want, m.UCI())
		}
		for m := range want {
			t.Errorf("%s: library has move %s, we do not", c.name, m)
		}
	}
}

// TestRandomGamesAgainstLibrary walks seeded random games and compares the
// legal moves and the FEN after each move with the library's.
func TestRandomGamesAgainstLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	plies := 0
	for game := 0; game < 40; game++ {
		p, _ := ParseFEN("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
		lp := libPosition(t, p.FEN())
		for ply := 0; ply < 200; ply++ {
			ours := p.LegalUCI()
			var theirs []string
			lms := lp.ValidMoves()
			for _, m := range lms {
				theirs = append(theirs, m.String())
			}
			slices.Sort(theirs)
			if !slices.Equal(ours, theirs) {
				t.Fatalf("game %d ply %d %s: moves differ\nours   %v\nlibrary %v", game, ply, p.FEN(), ours, theirs)
			}
			if len(ours) == 0 {
				break
			}
			// Prefer captures and promotions so games reach the
			// endgame and promote often.
			pick := ours[r.IntN(len(ours))]
			for range 3 {
				c := ours[r.IntN(len(ours))]
				m, _ := parseUCI(c)
				if p.board[m.to()] != 0 || m.promo() != 0 {
					pick = c
					break
				}
			}
			m, err := p.ParseMove(pick)
			if err != nil {
				t.Fatal(err)
			}
			q := p.play(m)
			p = &q
			for i := range lms {
				if lms[i].String() == pick {
					lp = lp.Update(&lms[i])
				}
			}
			if p.FEN() != lp.String() {
				t.Fatalf("game %d after %s: FEN %s, library %s", game, pick, p.FEN(), lp.String())
			}
			plies++
		}
	}
	t.Logf("%d plies compared", plies)
}

func TestParseFENRejects(t *testing.T) {
	bad := map[string]string{
		"fields":       "8/8/8/8/8/8/8/8 w - -  0",
		"ranks":        "8/8/8/8/8/8/8 w - - 0 1",
		"long rank":    "9/8/8/8/8/8/8/4K2k w - - 0 1",
		"no king":      "8/8/8/8/8/8/8/4K3 w - - 0 1",
		"two kings":    "k7/8/8/8/8/8/8/4KK2 w - - 0 1",
		"pawn rank 1":  "k7/8/8/8/8/8/8/P3K3 w - - 0 1",
		"letter":       "k7/8/8/8/8/8/8/X3K3 w - - 0 1",
		"side":         "k7/8/8/8/8/8/8/4K3 x - - 0 1",
		"castle rook":  "k7/8/8/8/8/8/8/4K3 w K - 0 1",
		"ep":           "k7/8/8/8/8/8/8/4K3 w - e6 0 1",
		"clock":        "k7/8/8/8/8/8/8/4K3 w - - x 1",
		"fullmove":     "k7/8/8/8/8/8/8/4K3 w - - 0 0",
		"ep wrong rnk": "k7/8/8/4p3/8/8/8/4K3 w - e5 0 1",
	}
	for name, fen := range bad {
		if _, err := ParseFEN(fen); err == nil {
			t.Errorf("%s: ParseFEN(%q) accepted", name, fen)
		}
	}
	// "not-to-move": white rook gives check with black to move is legal;
	// the rejected case is the side NOT to move being in check.
	if _, err := ParseFEN("k7/8/8/8/8/8/8/R3K3 w - - 0 1"); err == nil {
		t.Error("black in check with white to move was accepted")
	}
}

func TestFENRoundTrip(t *testing.T) {
	for _, c := range perftCases {
		p, err := ParseFEN(c.fen)
		if err != nil {
			t.Fatal(err)
		}
		if p.FEN() != c.fen {
			t.Errorf("round trip %q -> %q", c.fen, p.FEN())
		}
	}
}

func BenchmarkPerftKiwipete(b *testing.B) {
	p, _ := ParseFEN(perftCases[1].fen)
	for b.Loop() {
		perft(p, 3)
	}
}
