package chess

import (
	"encoding/json"
	"strings"
	"testing"

	"whale/data"
	"whale/internal/longtests"
)

// replayGold plays the gold solver through an episode of task and returns
// the final reward.
func replayGold(t *testing.T, d data.Domain, task data.Task) float64 {
	t.Helper()
	ep := d.NewEpisode(task)
	for turn := 0; turn < d.DefaultMaxTurns(); turn++ {
		a, err := d.GoldAction(task, ep.Observe())
		if err != nil {
			t.Fatalf("task %s: %v", task.ID, err)
		}
		res := ep.Step(a)
		if res.Done {
			if res.Reward != 1 {
				t.Logf("task %s: %s", task.ID, res.Feedback)
			}
			return res.Reward
		}
	}
	t.Fatalf("task %s: gold replay ran out of turns", task.ID)
	return 0
}

// mateTask builds a generated-style task for a position with a mate in d.
func mateTask(t *testing.T, fen string, d int) data.Task {
	t.Helper()
	p, err := ParseFEN(fen)
	if err != nil {
		t.Fatal(err)
	}
	task, err := puzzleTask(0, 0, p, d)
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// bruteMate is the search without ordering, shortcuts or budget: the
// oracle the fast searcher is checked against.
func bruteMate(p *Position, n int) bool {
	if n <= 0 {
		return false
	}
	for _, m := range p.legalMoves(nil) {
		q := p.play(m)
		if bruteLoses(&q, n-1) {
			return true
		}
	}
	return false
}

func bruteLoses(q *Position, n int) bool {
	moves := q.legalMoves(nil)
	if len(moves) == 0 {
		return q.inCheck()
	}
	for _, r := range moves {
		a := q.play(r)
		if !bruteMate(&a, n) {
			return false
		}
	}
	return true
}

func bruteDistance(p *Position, maxN int) int {
	for n := 1; n <= maxN; n++ {
		if bruteMate(p, n) {
			return n
		}
	}
	return 0
}

// twoRooks: white mates with Ra8 or Rb8; the listed move is a1a8.
const twoRooks = "7k/6pp/8/8/8/8/8/RR4K1 w - - 0 1"

func TestAlternativeMateScores(t *testing.T) {
	task := mateTask(t, twoRooks, 1)
	if task.Answer != "a1a8" {
		t.Fatalf("listed move %s, want a1a8 (first in UCI order)", task.Answer)
	}
	for _, mv := range []string{"a1a8", "b1b8", " B1B8 "} {
		ep := NewEpisode(task)
		res := ep.Step(data.Action{Kind: data.ActMove, Text: mv})
		if !res.Done || res.Reward != 1 || res.Failure != data.FailNone {
			t.Errorf("%q: %+v", mv, res)
		}
	}
	// ActAnswer with a UCI move counts like ActMove.
	res := NewEpisode(task).Step(data.Action{Kind: data.ActAnswer, Text: "b1b8"})
	if res.Reward != 1 {
		t.Errorf("answer b1b8: %+v", res)
	}
}

func TestWrongMoves(t *testing.T) {
	task := mateTask(t, twoRooks, 1)
	cases := []struct {
		action  data.Action
		fail    data.FailureKind
		mention string
	}{
		{data.Action{Kind: data.ActMove, Text: "a1a7"}, data.FailWrong, "a1a7"},
		{data.Action{Kind: data.ActMove, Text: "a1h8"}, data.FailInvalid, "a1h8"},
		{data.Action{Kind: data.ActMove, Text: "e2e4"}, data.FailInvalid, "e2e4"},
		{data.Action{Kind: data.ActMove, Text: "Ra8#"}, data.FailInvalid, "Ra8#"},
		{data.Action{Kind: data.ActMove, Text: "a1a9"}, data.FailInvalid, "a1a9"},
		{data.Action{Kind: data.ActMove, Text: ""}, data.FailInvalid, "not UCI"},
		{data.Action{Kind: data.ActMove, Text: "a7a8k"}, data.FailInvalid, "a7a8k"},
		{data.Action{Kind: "dance", Text: "a1a8"}, data.FailInvalid, "dance"},
	}
	for _, c := range cases {
		ep := NewEpisode(task)
		res := ep.Step(c.action)
		if !res.Done || res.Reward != 0 || res.Failure != c.fail || !strings.Contains(res.Feedback, c.mention) {
			t.Errorf("%+v: done %v reward %v failure %q feedback %q", c.action, res.Done, res.Reward, res.Failure, res.Feedback)
		}
		// Step after the end repeats the result.
		if again := ep.Step(data.Action{Kind: data.ActMove, Text: "a1a8"}); again.Reward != 0 || again.Failure != c.fail {
			t.Errorf("step after done changed the result: %+v", again)
		}
	}
	ep := NewEpisode(task)
	res := ep.Step(data.Action{Kind: data.ActTool, Tool: "engine", Args: "go"})
	if res.Done || res.Failure != data.FailToolError || ep.Observe().Turn != 1 {
		t.Errorf("tool call: %+v", res)
	}
	if res := ep.Step(data.Action{Kind: data.ActMove, Text: "b1b8"}); res.Reward != 1 {
		t.Errorf("mate after a tool call: %+v", res)
	}
}

func TestObservation(t *testing.T) {
	task := mateTask(t, twoRooks, 1)
	obs := NewEpisode(task).Observe()
	f := obs.Fields
	if f["side_to_move"] != "white" || f["fen"] != twoRooks || f["goal"] != "mate in 1" {
		t.Errorf("fields %v", f)
	}
	legal := f["legal_moves"].([]string)
	for i, m := range legal {
		if strings.ContainsAny(m, "+#x") || (i > 0 && legal[i-1] >= m) {
			t.Fatalf("legal moves not plain UCI sorted: %v", legal)
		}
	}
	p, _ := ParseFEN(twoRooks)
	if want := p.LegalUCI(); strings.Join(legal, " ") != strings.Join(want, " ") || len(legal) < 20 {
		t.Errorf("legal moves %v", legal)
	}
	board := f["board"].(string)
	if !strings.HasPrefix(board, "8 . . . . . . . k") || !strings.Contains(board, "1 R R . . . . K .") {
		t.Errorf("board:\n%s", board)
	}
	if len(f["moves_so_far"].([]string)) != 0 || !strings.Contains(obs.Text, "Legal moves (SAN UCI): ") {
		t.Errorf("obs %+v", obs)
	}
	// SAN marks checks, but a mate only as a check: b1b8 mates, a1a8 only
	// checks, and both read alike.
	if strings.Contains(obs.Text, "#") || !strings.Contains(obs.Text, "Rb8+ b1b8,") || !strings.Contains(obs.Text, "Ra8+ a1a8,") {
		t.Errorf("text must mark checks, mates as checks only:\n%s", obs.Text)
	}
	san := f["legal_san"].([]string)
	if len(san) != len(legal) || san[0] != "Ra2" {
		t.Errorf("legal_san %v", san)
	}
	if strings.Contains(obs.Text, "FEN") {
		t.Errorf("text shows the FEN (a field only):\n%s", obs.Text)
	}
	t.Logf("observation text:\n%s", obs.Text)
}

// Mate in 2 (from self-play): the listed first move is b6e6; b6f6 also
// forces mate in 2.
const mate2Alt = "8/8/1Q6/p7/P1PP3P/1P4P1/5k1K/2B3RR w - - 1 69"

func TestUnlistedForcingMoveContinues(t *testing.T) {
	task := mateTask(t, mate2Alt, 2)
	if !strings.HasPrefix(task.Answer, "b6e6 ") {
		t.Fatalf("listed line %s", task.Hidden[HiddenLine])
	}
	ep := NewEpisode(task)
	res := ep.Step(data.Action{Kind: data.ActMove, Text: "b6f6"})
	if res.Done {
		t.Fatalf("b6f6 ended the episode: %+v", res)
	}
	played := res.Obs.Fields["moves_so_far"].([]string)
	if len(played) != 2 || played[0] != "b6f6" {
		t.Fatalf("moves so far %v", played)
	}
	// The defender's reply is the first in UCI order among those that
	// delay mate longest, by the brute-force oracle.
	p, _ := ParseFEN(mate2Alt)
	q := p.Play(mustMove(t, p, "b6f6"))
	want, wantD := "", -1
	for _, r := range q.LegalUCI() {
		if d := bruteDistance(q.Play(mustMove(t, q, r)), 1); d > wantD {
			want, wantD = r, d
		}
	}
	if played[1] != want {
		t.Errorf("defender replied %s, want %s", played[1], want)
	}
	if res.Obs.Fields["goal"] != "mate in 1" {
		t.Errorf("goal %v", res.Obs.Fields["goal"])
	}
	// The gold solver, off the listed line now, finds the mate by search.
	a, err := GoldAction(task, res.Obs)
	if err != nil {
		t.Fatal(err)
	}
	if res := ep.Step(a); res.Reward != 1 {
		t.Errorf("gold %s after the unlisted line: %+v", a.Text, res)
	}
}

// Mate in 3 (from self-play): g1e1 is listed; after g1f1, which also
// forces mate in 3, one reply allows mate in 1 and three delay it to 2.
const mate3Alt = "8/2Q5/rpp1k2B/p7/P1PP3P/1P4PK/8/6RR w - - 1 63"

func TestLongestDefence(t *testing.T) {
	task := mateTask(t, mate3Alt, 3)
	p, _ := ParseFEN(mate3Alt)
	q := p.Play(mustMove(t, p, "g1f1"))
	want, wantD := "", -1
	for _, r := range q.LegalUCI() {
		if d := bruteDistance(q.Play(mustMove(t, q, r)), 2); d > wantD {
			want, wantD = r, d
		}
	}
	if wantD != 2 {
		t.Fatalf("oracle: longest defence %s mates in %d, want 2", want, wantD)
	}
	ep := NewEpisode(task)
	res := ep.Step(data.Action{Kind: data.ActMove, Text: "g1f1"})
	if res.Done {
		t.Fatalf("g1f1 ended the episode: %+v", res)
	}
	if got := res.Obs.Fields["moves_so_far"].([]string)[1]; got != want {
		t.Errorf("defender replied %s, want the longest defence %s", got, want)
	}
	// Through JSON, as a harness might hand the observation back.
	b, _ := json.Marshal(res.Obs)
	var obs data.Observation
	json.Unmarshal(b, &obs)
	for turn := 0; turn < 3 && !res.Done; turn++ {
		a, err := GoldAction(task, obs)
		if err != nil {
			t.Fatal(err)
		}
		res = ep.Step(a)
		obs = res.Obs
	}
	if res.Reward != 1 {
		t.Errorf("gold after the longest defence: %+v", res)
	}
	// A quiet legal move that does not force mate in 3 is wrong.
	if bruteLoses(p.Play(mustMove(t, p, "h3g2")), 2) {
		t.Fatal("oracle: h3g2 forces mate")
	}
	ep = NewEpisode(task)
	if res := ep.Step(data.Action{Kind: data.ActMove, Text: "h3g2"}); !res.Done || res.Failure != data.FailWrong || res.Reward != 0 {
		t.Errorf("h3g2 gave %+v", res)
	}
}

func mustMove(t *testing.T, p *Position, s string) Move {
	t.Helper()
	m, err := p.ParseMove(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSearchAgainstBruteForce compares the ordered, budgeted search with
// plain minimax on positions from seeded self-play, mates and non-mates.
func TestSearchAgainstBruteForce(t *testing.T) {
	want := 60
	if longtests.Short() {
		want = 16
	}
	var positions []*Position
	for g := 0; len(positions) < want && g < 40; g++ {
		f := playGame(77, g)
		for _, p := range f.pos {
			if p != nil {
				positions = append(positions, p)
			}
		}
	}
	for _, fen := range []string{twoRooks, mate2Alt, mate3Alt, perftCases[1].fen} {
		p, _ := ParseFEN(fen)
		positions = append(positions, p)
	}
	mates := 0
	for _, p := range positions {
		s := newSearcher(10_000_000)
		got, err := s.mateDistance(p, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := bruteDistance(p, 2); got != want {
			t.Errorf("%s: search says mate in %d, brute force %d", p.FEN(), got, want)
		}
		if got > 0 {
			mates++
			// Every legal move: does it keep a mate within 2?
			for _, m := range p.legalMoves(nil) {
				q := p.play(m)
				ok, _ := s.forces(&q, 1)
				if ok != bruteLoses(&q, 1) {
					t.Errorf("%s after %s: forces %v, brute force disagrees", p.FEN(), m.UCI(), ok)
				}
			}
		}
	}
	if mates < want/3 {
		t.Errorf("only %d mates among %d positions", mates, len(positions))
	}
}

func TestSearchBudget(t *testing.T) {
	p, _ := ParseFEN(mate3Alt)
	s := newSearcher(50)
	if _, err := s.mateDistance(p, 3); err != errBudget {
		t.Errorf("a 50-node search of a mate in 3 gave %v, want errBudget", err)
	}
}

func TestMalformedTask(t *testing.T) {
	task := mateTask(t, twoRooks, 1)
	task.Hidden[HiddenLine] = "a1a7"
	if err := ValidateTask(task); err == nil {
		t.Error("a line that does not mate validated")
	}
	res := NewEpisode(task).Step(data.Action{Kind: data.ActMove, Text: "a1a8"})
	if !res.Done || res.Reward != 0 || !strings.Contains(res.Feedback, "malformed") {
		t.Errorf("%+v", res)
	}
	if _, err := NewDomain(map[string][]data.Task{data.SplitTrain: {task}}); err == nil {
		t.Error("NewDomain accepted a malformed task")
	}
}
