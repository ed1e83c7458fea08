package chess

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"whale/data"
)

const sampleCSV = "testdata/lichess_sample.csv"

// The sample's bad rows, by line: what the importer must say.
var sampleBad = []struct {
	line  int
	field string
}{
	{8, "row"}, {9, "FEN"}, {10, "Moves"}, {11, "Rating"}, {12, "Moves"}, {13, "PuzzleId"},
}

func TestImportLichessStopsAtFirstBadLine(t *testing.T) {
	d, bad, err := ImportLichess(sampleCSV, data.ImportOptions{Seed: 1})
	var bl data.BadLine
	if d != nil || !errors.As(err, &bl) {
		t.Fatalf("domain %v, bad %v, err %v: want no domain and a BadLine error", d, bad, err)
	}
	if bl.File != sampleCSV || bl.Line != 8 || bl.Field != "row" || !strings.Contains(err.Error(), sampleCSV+":8") {
		t.Errorf("error %q (%+v)", err, bl)
	}
}

func importSample(t *testing.T) (data.Domain, map[string]data.Task) {
	t.Helper()
	d, bad, err := ImportLichess(sampleCSV, data.ImportOptions{Seed: 1, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) != len(sampleBad) {
		t.Fatalf("bad lines %v, want %d", bad, len(sampleBad))
	}
	for i, want := range sampleBad {
		if bad[i].File != sampleCSV || bad[i].Line != want.line || bad[i].Field != want.field || bad[i].Reason == "" {
			t.Errorf("bad line %d: %+v, want line %d field %s", i, bad[i], want.line, want.field)
		}
	}
	byID := map[string]data.Task{}
	for _, name := range data.Splits {
		tasks, err := d.Tasks(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			byID[task.ID] = task
		}
	}
	if len(byID) != 5 {
		t.Fatalf("%d tasks imported, want 5", len(byID))
	}
	return d, byID
}

func TestImportLichessSkipBad(t *testing.T) {
	d, byID := importSample(t)
	if d.DefaultMaxTurns() != 5 {
		t.Errorf("DefaultMaxTurns %d, want 5 (four solver moves plus one)", d.DefaultMaxTurns())
	}
	for id, task := range byID {
		res, _, err := data.ReplayGold(d, task)
		if err != nil || res.Reward != 1 {
			t.Errorf("gold replay of %s: %+v %v", id, res, err)
		}
	}
	m := byID["lichess-00sHx"]
	if m.Answer != "a2e6 f7f8" || m.Level != 2 || m.Hidden[HiddenMate] != "2" || m.Hidden[HiddenTrigger] != "e8d7" ||
		!strings.Contains(m.Problem, "mate in 2") || !strings.Contains(m.Problem, "Opponent's last move: e8d7") {
		t.Errorf("mate puzzle imported as %+v", m)
	}
	if p, _ := ParseFEN(m.Hidden[HiddenStartFEN]); p.SideToMove() != "white" {
		t.Errorf("start position %s: the solver (white) should move after the trigger", m.Hidden[HiddenStartFEN])
	}
	n := byID["lichess-00sJ9"]
	if n.Hidden[HiddenMate] != "0" || n.Answer != "e8e1 e1c1 f4h6 h6c1" || n.Level != 4 {
		t.Errorf("non-mate puzzle imported as %+v", n)
	}
}

func TestLichessOnlyMoves(t *testing.T) {
	_, byID := importSample(t)
	task := byID["lichess-00sJ9"]
	ep := NewEpisode(task)
	res := ep.Step(data.Action{Kind: data.ActMove, Text: "e8e1"})
	if res.Done || res.Obs.Fields["moves_so_far"].([]string)[1] != "g1h2" {
		t.Fatalf("listed move: %+v", res)
	}
	// A legal move other than the listed one loses a puzzle without a
	// mate theme.
	res = ep.Step(data.Action{Kind: data.ActMove, Text: "f4f2"})
	if !res.Done || res.Reward != 0 || res.Failure != data.FailWrong {
		t.Errorf("unlisted move: %+v", res)
	}
}

func TestLichessMateVerifiedBySearch(t *testing.T) {
	_, byID := importSample(t)
	// Mate in 3: e7e8q is not listed but also forces mate in 3.
	task := byID["lichess-wDeep3"]
	p, _ := ParseFEN(task.Hidden[HiddenStartFEN])
	q := p.Play(mustMove(t, p, "e7e8q"))
	want, wantD := "", -1
	for _, r := range q.LegalUCI() {
		if d := bruteDistance(q.Play(mustMove(t, q, r)), 2); d > wantD {
			want, wantD = r, d
		}
	}
	ep := NewEpisode(task)
	res := ep.Step(data.Action{Kind: data.ActMove, Text: "e7e8q"})
	if res.Done || res.Obs.Fields["moves_so_far"].([]string)[1] != want {
		t.Fatalf("e7e8q: %+v, want the reply %s", res, want)
	}
	for i := 0; i < 3 && !res.Done; i++ {
		a, err := GoldAction(task, res.Obs)
		if err != nil {
			t.Fatal(err)
		}
		res = ep.Step(a)
	}
	if res.Reward != 1 {
		t.Errorf("mate after the unlisted line: %+v", res)
	}
	// Mate in 4 is deeper than the verifier searches: the unlisted e7e8q,
	// though it also forces mate, falls back to the listed line.
	ep = NewEpisode(byID["lichess-wDeep4"])
	res = ep.Step(data.Action{Kind: data.ActMove, Text: "e7e8q"})
	if !res.Done || res.Failure != data.FailWrong || !strings.Contains(res.Feedback, "listed") {
		t.Errorf("deep unlisted move: %+v", res)
	}
}

func TestImportLichessHeaderless(t *testing.T) {
	b, _ := os.ReadFile(sampleCSV)
	lines := strings.Split(string(b), "\n")
	dir := t.TempDir()
	// Without a header; and with the columns reordered under a header.
	plain := filepath.Join(dir, "plain.csv")
	os.WriteFile(plain, []byte(strings.Join(lines[1:4], "\n")), 0o644)
	d, bad, err := ImportLichess(plain, data.ImportOptions{})
	if err != nil || len(bad) != 0 {
		t.Fatalf("headerless: %v %v", bad, err)
	}
	tasks, _ := d.Tasks(data.SplitTrain)
	if len(tasks) != 3 {
		t.Errorf("headerless: %d train tasks, want 3", len(tasks))
	}
	swapped := filepath.Join(dir, "swapped.csv")
	row := strings.Split(lines[3], ",")
	row[0], row[3] = row[3], row[0]
	os.WriteFile(swapped, []byte("Rating,FEN,Moves,PuzzleId,RatingDeviation,Popularity,NbPlays,Themes,GameUrl,OpeningTags\n"+strings.Join(row, ",")+"\n"), 0o644)
	if _, _, err := ImportLichess(swapped, data.ImportOptions{}); err != nil {
		t.Errorf("reordered header: %v", err)
	}
	missing := filepath.Join(dir, "missing.csv")
	os.WriteFile(missing, []byte("PuzzleId,FEN,Rating\n"), 0o644)
	if _, _, err := ImportLichess(missing, data.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "missing.csv:1") {
		t.Errorf("header without Moves: %v", err)
	}
	if _, _, err := ImportLichess(filepath.Join(dir, "absent.csv"), data.ImportOptions{}); err == nil {
		t.Error("absent file imported")
	}
}

func FuzzLichessRow(f *testing.F) {
	b, err := os.ReadFile(sampleCSV)
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, row string) {
		task, rerr := parseLichessRow(row, nil, 0)
		if rerr != nil {
			if rerr.field == "" || rerr.reason == "" {
				t.Fatalf("error without field or reason: %+v", rerr)
			}
			return
		}
		if err := ValidateTask(task); err != nil {
			t.Fatalf("accepted row gives an invalid task: %v", err)
		}
		// Following the listed line always solves an accepted puzzle.
		ep := NewEpisode(task)
		line := strings.Fields(task.Hidden[HiddenLine])
		var res data.StepResult
		for i := 0; i < len(line); i += 2 {
			res = ep.Step(data.Action{Kind: data.ActMove, Text: line[i]})
		}
		if !res.Done || res.Reward != 1 {
			t.Fatalf("listed line of %q: %+v", row, res)
		}
	})
}

func FuzzParseFEN(f *testing.F) {
	for _, c := range perftCases {
		f.Add(c.fen)
	}
	f.Add(twoRooks)
	f.Add("8/8/8/8/8/8/8/8 w - - 0 1")
	f.Add("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq e6 0 2")
	f.Fuzz(func(t *testing.T, fen string) {
		p, err := ParseFEN(fen)
		if err != nil {
			return
		}
		again, err := ParseFEN(p.FEN())
		if err != nil || again.FEN() != p.FEN() {
			t.Fatalf("%q -> %q does not parse back: %v", fen, p.FEN(), err)
		}
		for _, m := range p.legalMoves(nil) {
			q := p.play(m)
			if _, err := ParseFEN(q.FEN()); err != nil {
				t.Fatalf("%s after %s gives an unparsable %s: %v", p.FEN(), m.UCI(), q.FEN(), err)
			}
		}
	})
}
