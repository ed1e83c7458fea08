package chess

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"

	"whale/data"
)

// The ladder: generated puzzles weighted toward what a small model can
// learn to see, with harder ones kept for headroom. Each split holds
// LadderShares of each kind: mate in 1, a hanging piece to take (a
// capture that wins at least a minor piece, clearly better than every
// other move, after which the opponent neither mates nor wins material
// back at once), and mate in 2. The committed built-in set is the ladder
// set of BuiltinSeed (issue 36: under the self-play mates alone the
// embedded model sat at chance); `whale data generate --domain chess
// --seed S` writes another, which --data DIR --format splits reads.

const ladderVersion = "ladder-v1"

// LadderKinds are the ladder's puzzle kinds, easiest first, with their
// themes.
var LadderKinds = []struct {
	Name   string
	Themes string
	Share  float64
}{
	{"mateIn1", "mate mateIn1 oneMove", 0.40},
	{"hangingPiece", "hangingPiece oneMove", 0.35},
	{"mateIn2", "mate mateIn2 short", 0.25},
}

// minHangingGain is the least material, in pawns, a hanging-piece capture
// must win; the runner-up move must win at least two pawns less.
const minHangingGain = 3

// captureGain is what a move wins at once by a one-move exchange count:
// the captured piece, less the mover when the opponent attacks the
// destination afterwards.
func captureGain(p *Position, m Move) int {
	captured := 0
	if c := p.board[m.to()]; c != 0 {
		captured = pawnValues[pieceType(c)]
	} else if pieceType(p.board[m.from()]) == pawn && fileOf(m.from()) != fileOf(m.to()) {
		captured = 1
	}
	if captured == 0 {
		return 0
	}
	q := p.play(m)
	if q.attacked(m.to(), int(q.turn)) {
		return captured - pawnValues[pieceType(p.board[m.from()])]
	}
	return captured
}

// hangingCapture returns the position's hanging-piece capture, if it has
// one: the side to move is not in check and cannot mate at once, one
// capture wins at least minHangingGain and every other move at least two
// pawns less, and after it the opponent can neither mate nor win
// minHangingGain back at once elsewhere (a recapture is in the gain).
func hangingCapture(p *Position) (Move, bool) {
	if p.inCheck() {
		return 0, false
	}
	moves := sortedLegal(p)
	best, bestGain, second := Move(0), 0, 0
	for _, m := range moves {
		q := p.play(m)
		if q.Checkmated() {
			return 0, false
		}
		g := captureGain(p, m)
		switch {
		case g > bestGain:
			best, second, bestGain = m, bestGain, g
		case g > second:
			second = g
		}
	}
	if bestGain < minHangingGain || second > bestGain-2 {
		return 0, false
	}
	q := p.play(best)
	for _, r := range sortedLegal(&q) {
		// A recapture on the same square is already counted in the gain.
		if r.to() != best.to() && captureGain(&q, r) >= minHangingGain {
			return 0, false
		}
		if after := q.play(r); after.Checkmated() {
			return 0, false
		}
	}
	return best, true
}

// ladderFindings are the first position of each ladder kind in one game.
type ladderFindings struct {
	pos  [3]*Position
	move Move // the hanging-piece capture
	task [3]*data.Task
	key  [3]string
}

// playLadderGame plays the same seeded self-play as Generate (its own
// stream of games) and keeps the first position of each kind.
func playLadderGame(seed uint64, game int) ladderFindings {
	r := rand.New(rand.NewPCG(seed^0x1add3, uint64(game)))
	p, _ := ParseFEN(startFEN)
	s := newSearcher(genNodeBudget)
	var out ladderFindings
	buf := make([]Move, 0, 64)
	for ply := 0; ply < genMaxPly; ply++ {
		moves := p.legalMoves(buf[:0])
		if len(moves) == 0 {
			break
		}
		if ply >= genMinPly && p.halfmove < genMaxHalfmove {
			s.nodes, s.aborted = 0, false
			d, err := s.mateDistance(p, 2)
			if err == nil && d > 0 {
				k := map[int]int{1: 0, 2: 2}[d]
				if out.pos[k] == nil {
					cp := *p
					out.pos[k] = &cp
				}
			} else if err == nil && out.pos[1] == nil {
				if m, ok := hangingCapture(p); ok {
					cp := *p
					out.pos[1], out.move = &cp, m
				}
			}
			if out.pos[0] != nil && out.pos[1] != nil && out.pos[2] != nil {
				break
			}
		}
		m := pickMove(p, moves, r)
		q := p.play(m)
		p = &q
		if insufficient(p) {
			break
		}
	}
	for k, pos := range out.pos {
		if pos == nil {
			continue
		}
		out.key[k] = pos.key()
		if t, err := ladderTask(seed, game, k, pos, out.move); err == nil {
			out.task[k] = &t
		}
	}
	return out
}

// ladderTask builds the task of kind k (an index of LadderKinds) at p.
func ladderTask(seed uint64, game, k int, p *Position, capture Move) (data.Task, error) {
	kind := LadderKinds[k]
	var t data.Task
	if kind.Name == "hangingPiece" {
		fen := p.FEN()
		t = data.Task{
			Problem: problemText(p, "find the best move"),
			Answer:  capture.UCI(),
			Level:   1,
			Hidden: map[string]string{
				HiddenStartFEN: fen,
				HiddenLine:     capture.UCI(),
				HiddenMate:     "0",
			},
		}
	} else {
		d := 1
		if kind.Name == "mateIn2" {
			d = 2
		}
		var err error
		if t, err = puzzleTask(seed, game, p, d); err != nil {
			return data.Task{}, err
		}
	}
	t.ID = fmt.Sprintf("chess-ladder-%d-g%06d-%s", seed, game, kind.Name)
	t.Domain = Name
	t.Hidden[HiddenSource] = "generated " + ladderVersion
	t.Hidden[HiddenSeed] = strconv.FormatUint(seed, 10)
	t.Hidden[HiddenThemes] = kind.Themes
	if err := ValidateTask(t); err != nil {
		return data.Task{}, err
	}
	return t, nil
}

// ladderCounts splits n tasks over the kinds by LadderShares, the
// remainder going to the easiest kinds first.
func ladderCounts(n int) [3]int {
	var c [3]int
	left := n
	for k, kind := range LadderKinds {
		c[k] = int(float64(n) * kind.Share)
		left -= c[k]
	}
	for k := 0; left > 0; k = (k + 1) % 3 {
		c[k]++
		left--
	}
	return c
}

// GenerateLadder makes the ladder set from seed: four disjoint splits of
// the given sizes, each holding LadderKinds in their shares, a position
// used once. The same seed and sizes give the same splits on any machine.
func GenerateLadder(seed uint64, sizes data.Sizes, progress func(done, total int)) (map[string][]data.Task, error) {
	total := sizes.Total()
	if sizes.Train < 0 || sizes.Val < 0 || sizes.Audit < 0 || sizes.Test < 0 || total == 0 {
		return nil, fmt.Errorf("chess: generate ladder: bad sizes %+v", sizes)
	}
	var want [3]int
	for _, n := range []int{sizes.Train, sizes.Val, sizes.Audit, sizes.Test} {
		c := ladderCounts(n)
		for k := range want {
			want[k] += c[k]
		}
	}
	var got [3][]data.Task
	seen := map[string]bool{}
	done := func() bool { return len(got[0]) >= want[0] && len(got[1]) >= want[1] && len(got[2]) >= want[2] }
	workers := max(1, runtime.GOMAXPROCS(0))
	for first := 0; !done(); {
		if first > 1000*total+10000 {
			return nil, fmt.Errorf("chess: generate ladder: %d games gave only %d+%d+%d of %v puzzles", first, len(got[0]), len(got[1]), len(got[2]), want)
		}
		batch := playParallel(genBatch, workers, func(i int) ladderFindings { return playLadderGame(seed, first+i) })
		first += len(batch)
		for _, f := range batch {
			for k := range f.task {
				if t := f.task[k]; t != nil && len(got[k]) < want[k] && !seen[f.key[k]] {
					seen[f.key[k]] = true
					got[k] = append(got[k], *t)
				}
			}
		}
		if progress != nil {
			progress(len(got[0])+len(got[1])+len(got[2]), total)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x1add3))
	for k := range got {
		r.Shuffle(len(got[k]), func(i, j int) { got[k][i], got[k][j] = got[k][j], got[k][i] })
	}
	out := map[string][]data.Task{}
	for _, sp := range []struct {
		name string
		n    int
	}{{data.SplitVal, sizes.Val}, {data.SplitAudit, sizes.Audit}, {data.SplitTest, sizes.Test}, {data.SplitTrain, sizes.Train}} {
		c := ladderCounts(sp.n)
		split := make([]data.Task, 0, sp.n)
		for k := range got {
			split = append(split, got[k][:c[k]]...)
			got[k] = got[k][c[k]:]
		}
		r.Shuffle(len(split), func(i, j int) { split[i], split[j] = split[j], split[i] })
		out[sp.name] = split
	}
	return out, nil
}
