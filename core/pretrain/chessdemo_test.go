package pretrain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"whale/data"
	"whale/data/chess"
	"whale/harnesses"
)

// puzzle builds a chess task starting at fen whose listed line is line.
func puzzle(t *testing.T, fen, line string, mate int) data.Task {
	t.Helper()
	task := data.Task{ID: "demo", Domain: chess.Name, Answer: line, Level: 1, Hidden: map[string]string{
		chess.HiddenStartFEN: fen, chess.HiddenLine: line, chess.HiddenMate: string(rune('0' + mate)),
	}}
	if err := chess.ValidateTask(task); err != nil {
		t.Fatal(err)
	}
	return task
}

// demoMove runs the demonstrator without noise on a task's first
// position and returns its completion.
func demoMove(t *testing.T, task data.Task) string {
	t.Helper()
	d := &demonstrator{mix: Mix{}}
	obs := chess.NewEpisode(task).Observe()
	out, err := d.chessReply(rand.New(rand.NewPCG(1, 2)), harnesses.RequestInfo{Task: task, Obs: obs}, "")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The demonstration follows the board, not the listed line: where the
// procedure's move differs from the gold move it plays the procedure's,
// and the same board with another listed line gives the same text.
func TestChessDemoReadsTheBoard(t *testing.T) {
	// Two back-rank mates: Ra8 and Rb8. The procedure lists the checks in
	// UCI order and plays the first that leaves no reply, Ra8.
	const twoMates = "7k/6pp/8/8/8/8/8/RR4K1 w - - 0 1"
	a := demoMove(t, puzzle(t, twoMates, "b1b8", 1))
	if !strings.HasSuffix(a, "<move>a1a8</move>") || !strings.Contains(a, "Checks: Ra8+ a1a8 0, Rb8+ b1b8 0.") {
		t.Errorf("two mates, gold b1b8: demonstration\n%s", a)
	}
	if b := demoMove(t, puzzle(t, twoMates, "a1a8", 1)); b != a {
		t.Errorf("the listed line changed the demonstration:\n%s\nagainst\n%s", b, a)
	}
	// A puzzle without a mate theme whose listed move is a quiet king
	// move, while the black queen stands free: the procedure takes it,
	// and lists no checks (Ra1+ is one, but no mate).
	const freeQueen = "k7/8/8/8/3q4/8/7K/3R4 w - - 0 1"
	c := demoMove(t, puzzle(t, freeQueen, "h2h3", 0))
	if !strings.HasSuffix(c, "<move>d1d4</move>") || !strings.HasPrefix(c, "Captures: Rxd4 d1d4 queen 9 free.") || strings.Contains(c, "Checks") {
		t.Errorf("free queen, gold h2h3: demonstration\n%s", c)
	}
	// A free knight and a free queen: the queen is listed first (though
	// its capture comes later in UCI order) and taken.
	const two = "k7/8/8/2n5/3q4/8/7K/2RR4 w - - 0 1"
	if e := demoMove(t, puzzle(t, two, "h2h3", 0)); !strings.HasPrefix(e, "Captures: Rxd4 d1d4 queen 9 free, Rxc5 c1c5 knight 3 defended.") || !strings.HasSuffix(e, "<move>d1d4</move>") {
		t.Errorf("queen and knight, gold h2h3: demonstration\n%s", e)
	}
	// A best-move puzzle with a mate at once on the board: the checks are
	// listed and the mate played, not the bigger capture.
	const mateOrQueen = "k7/ppp5/8/8/q7/8/7K/R2R4 w - - 0 1"
	if f := demoMove(t, puzzle(t, mateOrQueen, "a1a4", 0)); !strings.HasPrefix(f, "Checks: ") || !strings.HasSuffix(f, "<move>d1d8</move>") {
		t.Errorf("mate or queen, gold a1a4: demonstration\n%s", f)
	}
}

// Mate-in-2 puzzles of the built-in set: without a mate at once the
// demonstration names a move the board's search proves forcing, and the
// episode accepts it.
func TestChessDemoMateInTwo(t *testing.T) {
	d, err := chess.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := d.Tasks(data.SplitVal)
	seen := 0
	for _, task := range tasks {
		if task.Level != 2 || seen == 8 {
			continue
		}
		seen++
		got := demoMove(t, task)
		if !strings.Contains(got, "No mate at once.") && !strings.Contains(got, "leaves no reply") {
			t.Errorf("%s: demonstration\n%s", task.ID, got)
		}
		mv := got[strings.LastIndex(got, "<move>")+6 : len(got)-len("</move>")]
		if res := d.NewEpisode(task).Step(data.Action{Kind: data.ActMove, Text: mv}); res.Failure != data.FailNone {
			t.Errorf("%s: demonstrated %s fails: %s", task.ID, mv, res.Feedback)
		}
	}
}
