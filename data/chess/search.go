package chess

import (
	"errors"
	"slices"
)

// errBudget says a search ran out of nodes before it could prove or refute
// a mate. Callers treat it as "unknown", never as "no mate".
var errBudget = errors.New("chess: mate search exceeded its node budget")

// searcher proves or refutes forced mates within a fixed number of the
// attacker's moves. Its only bound is a count of positions visited, so the
// result is the same on every machine; when the count runs out the search
// says so instead of guessing.
type searcher struct {
	nodes, limit int
	aborted      bool
	// Scratch space per ply, reused so deep searches do not allocate.
	moves [][]Move
	succ  [][]succ
}

type succ struct {
	pos   Position
	score int
}

func newSearcher(limit int) *searcher { return &searcher{limit: limit} }

func (s *searcher) scratch(ply int) ([]Move, []succ) {
	for len(s.moves) <= ply {
		s.moves = append(s.moves, make([]Move, 0, 64))
		s.succ = append(s.succ, make([]succ, 0, 64))
	}
	return s.moves[ply][:0], s.succ[ply][:0]
}

// visit counts a node and reports whether the budget still holds.
func (s *searcher) visit() bool {
	s.nodes++
	if s.nodes > s.limit {
		s.aborted = true
	}
	return !s.aborted
}

// mateIn reports whether the side to move forces mate within n of its own
// moves. Checks are searched first, then captures, then the rest: forced
// mates are mostly made of checks, so a mate is usually found early and a
// refutation costs little.
func (s *searcher) mateIn(p *Position, n, ply int) bool {
	if n <= 0 || s.aborted {
		return false
	}
	moves, succs := s.scratch(ply)
	moves = p.pseudo(moves)
	s.moves[ply] = moves
	if n == 1 {
		// Only a check can mate.
		for _, m := range moves {
			q, ok := p.legal(m)
			if !ok || !s.visit() {
				continue
			}
			if q.inCheck() && !q.hasLegalMove(s.scratchMoves(ply+1)) {
				return true
			}
		}
		return false
	}
	for _, m := range moves {
		q, ok := p.legal(m)
		if !ok {
			continue
		}
		score := 0
		switch {
		case q.inCheck():
			score = 2
		case p.board[m.to()] != 0 || m.promo() != 0:
			score = 1
		}
		succs = append(succs, succ{q, score})
	}
	s.succ[ply] = succs
	for pass := 2; pass >= 0; pass-- {
		for i := range succs {
			if succs[i].score != pass || !s.visit() {
				continue
			}
			if s.defenderLoses(&succs[i].pos, n-1, ply+1) {
				return true
			}
		}
	}
	return false
}

// defenderLoses reports whether, with the defender to move in q, every
// reply leaves the attacker a mate within n (n = 0: q must be mate now).
func (s *searcher) defenderLoses(q *Position, n, ply int) bool {
	if s.aborted {
		return false
	}
	inCheck := q.inCheck()
	if n == 0 {
		return inCheck && !q.hasLegalMove(s.scratchMoves(ply))
	}
	moves, _ := s.scratch(ply)
	moves = q.pseudo(moves)
	s.moves[ply] = moves
	any := false
	for _, m := range moves {
		r, ok := q.legal(m)
		if !ok {
			continue
		}
		any = true
		if !s.visit() || !s.mateIn(&r, n, ply+1) {
			return false
		}
	}
	if !any {
		return inCheck // mate; stalemate is a draw and refutes the attempt
	}
	return true
}

func (s *searcher) scratchMoves(ply int) []Move {
	m, _ := s.scratch(ply)
	return m
}

// mateDistance returns the smallest n <= maxN such that the side to move
// mates within n moves, or 0 when there is none.
func (s *searcher) mateDistance(p *Position, maxN int) (int, error) {
	for n := 1; n <= maxN; n++ {
		if s.mateIn(p, n, 0) {
			return n, nil
		}
		if s.aborted {
			return 0, errBudget
		}
	}
	return 0, nil
}

// forces reports whether, with the defender to move in q, the attacker
// mates within n of its moves whatever the defender does.
func (s *searcher) forces(q *Position, n int) (bool, error) {
	ok := s.defenderLoses(q, n, 0)
	if s.aborted {
		return false, errBudget
	}
	return ok, nil
}

// sortedLegal lists the legal moves ordered by their UCI text, the order in
// which ties between equally good moves are broken.
func sortedLegal(p *Position) []Move {
	ms := p.legalMoves(nil)
	slices.SortFunc(ms, func(a, b Move) int {
		if a.UCI() < b.UCI() {
			return -1
		}
		if a.UCI() > b.UCI() {
			return 1
		}
		return 0
	})
	return ms
}

// bestMate returns the first move in UCI order that keeps the fastest
// forced mate within maxN moves, and that mate's length; 0 when there is
// no mate within maxN.
func (s *searcher) bestMate(p *Position, maxN int) (Move, int, error) {
	d, err := s.mateDistance(p, maxN)
	if err != nil || d == 0 {
		return 0, 0, err
	}
	for _, m := range sortedLegal(p) {
		q := p.play(m)
		ok, err := s.forces(&q, d-1)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			return m, d, nil
		}
	}
	panic("chess: mate distance found but no move keeps it")
}

// longestDefence returns the defender's reply in q that delays mate
// longest, the first in UCI order among equals, and the attacker's mate
// distance after it. The attacker must force mate within n in q; a reply
// that escapes altogether (distance 0) would be returned at once, but the
// precondition rules it out.
func (s *searcher) longestDefence(q *Position, n int) (Move, int, error) {
	best, bestD := Move(0), -1
	for _, r := range sortedLegal(q) {
		after := q.play(r)
		d, err := s.mateDistance(&after, n)
		if err != nil {
			return 0, 0, err
		}
		if d == 0 {
			return r, 0, nil
		}
		if d > bestD {
			best, bestD = r, d
		}
	}
	if bestD < 0 {
		panic("chess: longestDefence called on a position without legal moves")
	}
	return best, bestD, nil
}
