package chess

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"whale/data"
)

// Generation settings. They are part of what a seed means: changing any of
// them changes the committed splits, so the regeneration test will fail
// until the splits are generated again.
const (
	genVersion = "selfplay-v1"
	// Puzzles are looked for from this ply on, so that they are not
	// opening accidents, and games stop at genMaxPly.
	genMinPly = 12
	genMaxPly = 200
	// Positions whose fifty-move counter is this high are skipped: a claim
	// of a draw could interfere with a mate in two.
	genMaxHalfmove = 80
	// Node budget for proving one position's mate distance (<= 2). Almost
	// every position needs a few thousand nodes; the rare ones that need
	// more are skipped, deterministically.
	genNodeBudget = 400_000
	// Games are played in batches of this many, in parallel, and collected
	// in game order, so the result does not depend on the worker count.
	genBatch = 32
)

// pieceValue in centipawns, for the self-play policy.
var pieceValue = [7]int{0, 100, 300, 320, 500, 900, 0}

// findings are the first mate-in-1 and mate-in-2 positions of one game,
// and their puzzles, indexed by mate distance; nil when none.
type findings struct {
	game int
	pos  [3]*Position
	key  [3]string
	task [3]*data.Task
}

// playAndSolve plays a game and builds the tasks of its findings.
func playAndSolve(seed uint64, game int) findings {
	f := playGame(seed, game)
	for d, p := range f.pos {
		if p == nil {
			continue
		}
		f.key[d] = p.key()
		if t, err := puzzleTask(seed, game, p, d); err == nil {
			f.task[d] = &t
		}
	}
	return f
}

// playGame plays one seeded self-play game with a noisy one-ply greedy
// policy (it takes material, avoids attacked squares, blunders now and
// then, never looks for mates) and returns the first position where the
// side to move mates in exactly 1 and in exactly 2.
func playGame(seed uint64, game int) findings {
	r := rand.New(rand.NewPCG(seed, uint64(game)))
	p, _ := ParseFEN(startFEN)
	s := newSearcher(genNodeBudget)
	out := findings{game: game}
	buf := make([]Move, 0, 64)
	for ply := 0; ply < genMaxPly; ply++ {
		moves := p.legalMoves(buf[:0])
		if len(moves) == 0 {
			break
		}
		if ply >= genMinPly && p.halfmove < genMaxHalfmove {
			s.nodes, s.aborted = 0, false
			d, err := s.mateDistance(p, 2)
			if err == nil && d > 0 && out.pos[d] == nil {
				cp := *p
				out.pos[d] = &cp
				if out.pos[1] != nil && out.pos[2] != nil {
					break
				}
			}
		}
		m := pickMove(p, moves, r)
		q := p.play(m)
		p = &q
		if insufficient(p) {
			break
		}
	}
	return out
}

func pickMove(p *Position, moves []Move, r *rand.Rand) Move {
	if r.IntN(10) == 0 {
		return moves[r.IntN(len(moves))]
	}
	them := int(p.turn ^ 1)
	best, bestScore := moves[0], -1<<30
	for _, m := range moves {
		score := pieceValue[pieceType(p.board[m.to()])]
		if m.promo() != 0 {
			score += pieceValue[m.promo()] - pieceValue[pawn]
		}
		q := p.play(m)
		moved := q.board[m.to()]
		if q.attacked(m.to(), them) {
			score -= pieceValue[pieceType(moved)] * 4 / 5
		}
		score += r.IntN(200)
		if score > bestScore {
			best, bestScore = m, score
		}
	}
	return best
}

// insufficient reports bare kings (or king and one minor piece against a
// king): no mate can arise, so the game is not worth continuing.
func insufficient(p *Position) bool {
	minor := 0
	for _, pc := range p.board {
		switch pieceType(pc) {
		case pawn, rook, queen:
			return false
		case knight, bishop:
			minor++
		}
	}
	return minor <= 1
}

const startFEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"

// Generate makes mate-in-1 and mate-in-2 puzzles from seeded self-play and
// deals them into four disjoint splits of the given sizes, half of each
// split mate-in-1 (Level 1) and half mate-in-2 (Level 2), mate-in-1 taking
// the odd one. Each game contributes at most its first mate-in-1 and its
// first mate-in-2 position, and a position (clocks aside) is used once.
// progress, if not nil, is called with the number of puzzles found so far.
// The same seed and sizes give the same splits byte for byte on any
// machine.
func Generate(seed uint64, sizes data.Sizes, progress func(done, total int)) (map[string][]data.Task, error) {
	total := sizes.Total()
	if sizes.Train < 0 || sizes.Val < 0 || sizes.Audit < 0 || sizes.Test < 0 || total == 0 {
		return nil, fmt.Errorf("chess: generate: bad sizes %+v", sizes)
	}
	// Each split is half mate-in-1 (taking the odd task) and half
	// mate-in-2; see dealStratified.
	want := [3]int{}
	for _, n := range []int{sizes.Train, sizes.Val, sizes.Audit, sizes.Test} {
		want[1] += n - n/2
		want[2] += n / 2
	}
	got := [3][]data.Task{}
	seen := map[string]bool{}
	workers := max(1, runtime.GOMAXPROCS(0))
	for first := 0; len(got[1]) < want[1] || len(got[2]) < want[2]; {
		if first > 1000*total+10000 {
			return nil, fmt.Errorf("chess: generate: %d games gave only %d+%d of %d+%d puzzles", first, len(got[1]), len(got[2]), want[1], want[2])
		}
		// The batch size changes which games are played beyond the last
		// one used, never which puzzles are taken: collection is in game
		// order.
		need := want[1] - len(got[1]) + want[2] - len(got[2])
		batch := playParallel(min(genBatch, max(workers, need)), workers, func(i int) findings { return playAndSolve(seed, first+i) })
		first += len(batch)
		for _, f := range batch {
			for d := 1; d <= 2; d++ {
				// A nil task is a line the budget could not finish: the
				// next game will do.
				t := f.task[d]
				if t == nil || len(got[d]) >= want[d] || seen[f.key[d]] {
					continue
				}
				seen[f.key[d]] = true
				got[d] = append(got[d], *t)
			}
		}
		if progress != nil {
			progress(len(got[1])+len(got[2]), total)
		}
	}
	return dealStratified(seed, sizes, got[1], got[2]), nil
}

// puzzleTask builds the task for a position with a mate in exactly d: the
// listed line is the gold solver's (first fastest mate in UCI order)
// against the longest defence.
func puzzleTask(seed uint64, game int, p *Position, d int) (data.Task, error) {
	s := newSearcher(genNodeBudget)
	var line, solver []string
	cur := p
	for left := d; left > 0; left-- {
		m, n, err := s.bestMate(cur, left)
		if err != nil {
			return data.Task{}, err
		}
		if n != left {
			return data.Task{}, fmt.Errorf("chess: position %s: mate in %d, want %d", cur.FEN(), n, left)
		}
		line = append(line, m.UCI())
		solver = append(solver, m.UCI())
		after := cur.play(m)
		if left == 1 {
			break
		}
		r, _, err := s.longestDefence(&after, left-1)
		if err != nil {
			return data.Task{}, err
		}
		line = append(line, r.UCI())
		next := after.play(r)
		cur = &next
	}
	fen := p.FEN()
	return data.Task{
		ID:      fmt.Sprintf("chess-%d-g%06d-m%d", seed, game, d),
		Domain:  Name,
		Problem: problemText(p, fmt.Sprintf("mate in %d", d)),
		Answer:  strings.Join(solver, " "),
		Level:   d,
		Hidden: map[string]string{
			HiddenStartFEN: fen,
			HiddenLine:     strings.Join(line, " "),
			HiddenMate:     strconv.Itoa(d),
			HiddenSource:   "generated " + genVersion,
			HiddenSeed:     strconv.FormatUint(seed, 10),
		},
	}, nil
}

func problemText(p *Position, goal string) string {
	side := strings.ToUpper(p.SideToMove()[:1]) + p.SideToMove()[1:]
	return fmt.Sprintf("%s to move: %s.\nFEN: %s", side, goal, p.FEN())
}

// dealStratified shuffles each level with the seed and deals val, audit and
// test first and train last (so a different train size leaves the
// evaluation splits alone), each split taking half its tasks from each
// level.
func dealStratified(seed uint64, sizes data.Sizes, l1, l2 []data.Task) map[string][]data.Task {
	r := rand.New(rand.NewPCG(seed, 0xc4e55))
	r.Shuffle(len(l1), func(i, j int) { l1[i], l1[j] = l1[j], l1[i] })
	r.Shuffle(len(l2), func(i, j int) { l2[i], l2[j] = l2[j], l2[i] })
	out := map[string][]data.Task{}
	for _, sp := range []struct {
		name string
		n    int
	}{{data.SplitVal, sizes.Val}, {data.SplitAudit, sizes.Audit}, {data.SplitTest, sizes.Test}, {data.SplitTrain, sizes.Train}} {
		n2 := sp.n / 2
		n1 := sp.n - n2
		split := make([]data.Task, 0, sp.n)
		split = append(split, l1[:n1]...)
		split = append(split, l2[:n2]...)
		l1, l2 = l1[n1:], l2[n2:]
		// Interleave the levels in a seeded order so a prefix of a split is
		// as mixed as the whole.
		r.Shuffle(len(split), func(i, j int) { split[i], split[j] = split[j], split[i] })
		out[sp.name] = split
	}
	return out
}

// playParallel is play(0) … play(n−1) on workers goroutines, in order of
// i in the result whatever order they finish in.
func playParallel[T any](n, workers int, play func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i] = play(i)
			}
		})
	}
	for i := range out {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}
