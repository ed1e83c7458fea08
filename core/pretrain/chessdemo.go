package pretrain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"whale/data"
	"whale/data/chess"
)

// The chess demonstrator reads the board. Its move comes from the
// observation alone (the FEN and the goal the episode shows), never from
// the task's listed line, by a short procedure written out before the
// move so the model can imitate it. The goal picks the procedure.
//
// A mate goal ("mate in N"):
//
//  1. list the checks, each with the number of replies it leaves;
//  2. a check that leaves none is mate: play it;
//  3. with more than one move left, play the first move that forces the
//     mate (the board's own search: the text says which check or move it
//     is, not how it was found);
//  4. otherwise go on as for any other goal.
//
// Any other goal ("find the best move"):
//
//  1. a check that leaves no reply is mate: list the checks and play it;
//  2. otherwise list the captures, the biggest piece taken first (then
//     the smallest taker), each with the piece it takes, its value and
//     whether the square is defended, and take the biggest safe gain;
//  3. with no gain, list the checks and play the one that leaves the
//     fewest replies, else the first legal move.
//
// The procedure is what a model can learn to do from what it sees: SAN
// marks the checks and captures, the board shows what stands where and
// what is defended. Listing captures biggest first puts the usual answer
// first (on the built-in ladder's hanging pieces the biggest capture is
// the answer 92 % of the time), so a model that only learns to find the
// biggest capture already solves most of them. Every move it names is
// written as the observation lists it, SAN then UCI, so the move tag
// copies the UCI from a line just written rather than looking it up in
// the prompt (a model trained 40 steps on SAN alone listed the right
// checks but tagged the wrong UCI: docs/BASE_MODEL.md, "chess").

// maxListed bounds the checks and captures written out, so a
// demonstration fits the harnesses' completion budget.
const maxListed = 10

// chessProcedure returns the written procedure (ending before the move
// tag) and the move it chooses, from obs alone.
func chessProcedure(obs data.Observation) (text, move string, err error) {
	fen, _ := obs.Fields["fen"].(string)
	facts, err := chess.ReadMoves(fen)
	if err != nil {
		return "", "", fmt.Errorf("pretrain: chess procedure: %w", err)
	}
	if len(facts) == 0 {
		return "", "", fmt.Errorf("pretrain: chess procedure: no legal move in %s", fen)
	}
	var b strings.Builder
	var checks, captures []chess.MoveFact
	mates := false
	for _, f := range facts {
		if f.Check {
			checks = append(checks, f)
			mates = mates || f.Replies == 0
		}
		if f.Captured > 0 {
			captures = append(captures, f)
		}
	}
	goal, _ := obs.Fields["goal"].(string)
	n := mateGoal(goal)
	listedChecks := n > 0 || mates
	if listedChecks {
		writeChecks(&b, checks)
		for _, f := range checks {
			if f.Replies == 0 {
				fmt.Fprintf(&b, "%s %s leaves no reply: mate.\n", f.SAN, f.UCI)
				return b.String(), f.UCI, nil
			}
		}
	}
	if n > 1 {
		uci, ok, err := chess.ForcedMate(fen, n)
		if err != nil {
			return "", "", fmt.Errorf("pretrain: chess procedure: %w", err)
		}
		if ok {
			f := factOf(facts, uci)
			fmt.Fprintf(&b, "No mate at once. %s %s forces mate in %d.\n", f.SAN, f.UCI, n)
			return b.String(), f.UCI, nil
		}
	}
	if best, gain := writeCaptures(&b, captures); gain > 0 {
		fmt.Fprintf(&b, "Take: %s %s wins %d.\n", best.SAN, best.UCI, gain)
		return b.String(), best.UCI, nil
	}
	if len(checks) > 0 {
		if !listedChecks {
			writeChecks(&b, checks)
		}
		least := checks[0]
		for _, f := range checks[1:] {
			if f.Replies < least.Replies {
				least = f
			}
		}
		fmt.Fprintf(&b, "No gain. %s %s leaves the fewest replies.\n", least.SAN, least.UCI)
		return b.String(), least.UCI, nil
	}
	fmt.Fprintf(&b, "No gain. %s %s.\n", facts[0].SAN, facts[0].UCI)
	return b.String(), facts[0].UCI, nil
}

// writeChecks writes "Checks: SAN UCI replies, …." (or "Checks: none.").
func writeChecks(b *strings.Builder, checks []chess.MoveFact) {
	if len(checks) == 0 {
		b.WriteString("Checks: none.\n")
		return
	}
	items := make([]string, 0, len(checks))
	for _, f := range checks[:min(len(checks), maxListed)] {
		items = append(items, f.SAN+" "+f.UCI+" "+strconv.Itoa(f.Replies))
	}
	fmt.Fprintf(b, "Checks: %s.\n", strings.Join(items, ", "))
}

// writeCaptures writes "Captures: SAN UCI piece value free|defended, …."
// biggest piece taken first, then the smallest taker, then UCI order, and
// returns the capture of the biggest safe gain (the piece taken, less the
// taker where the square is defended) and that gain; 0 when none gains.
func writeCaptures(b *strings.Builder, captures []chess.MoveFact) (chess.MoveFact, int) {
	if len(captures) == 0 {
		return chess.MoveFact{}, 0
	}
	captures = slices.Clone(captures)
	slices.SortStableFunc(captures, func(x, y chess.MoveFact) int {
		if x.Captured != y.Captured {
			return y.Captured - x.Captured
		}
		return x.Mover - y.Mover
	})
	best, bestGain := chess.MoveFact{}, 0
	items := make([]string, 0, min(len(captures), maxListed))
	for i, f := range captures {
		safe := "free"
		if f.Defended {
			safe = "defended"
		}
		if i < maxListed {
			items = append(items, f.SAN+" "+f.UCI+" "+f.Taken+" "+strconv.Itoa(f.Captured)+" "+safe)
		}
		gain := f.Captured
		if f.Defended {
			gain -= f.Mover
		}
		if gain > bestGain {
			best, bestGain = f, gain
		}
	}
	fmt.Fprintf(b, "Captures: %s.\n", strings.Join(items, ", "))
	return best, bestGain
}

// mateGoal reads "mate in N" from an observation's goal; 0 otherwise.
func mateGoal(goal string) int {
	rest, ok := strings.CutPrefix(goal, "mate in ")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return 0
	}
	return n
}

func factOf(facts []chess.MoveFact, uci string) chess.MoveFact {
	for _, f := range facts {
		if f.UCI == uci {
			return f
		}
	}
	return chess.MoveFact{UCI: uci, SAN: uci}
}
