package harnesses

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"whale/data"
)

// fakeDomain is a small domain for tests, in three flavours that mirror
// the built-in ones closely enough for their h0 harnesses: "math" (a calc
// tool, numeric answers), "searchqa" (a search tool returning passages)
// and "chess" (multi-move lines with legal-move lists, illegal moves end
// the episode).
type fakeDomain struct {
	name  string
	turns int
}

func (d *fakeDomain) Name() string         { return d.name }
func (d *fakeDomain) DefaultMaxTurns() int { return d.turns }

func (d *fakeDomain) Tools() []data.Tool {
	switch d.name {
	case "math":
		return []data.Tool{fakeTool{"calc", "adds integers: A+B"}}
	case "searchqa":
		return []data.Tool{fakeTool{"search", "search an encyclopedia"}}
	case "chess":
		return []data.Tool{fakeTool{"attacks", "attacked pieces"}}
	}
	return nil
}

func (d *fakeDomain) Tasks(split string) ([]data.Task, error) { return d.make(200), nil }

func (d *fakeDomain) make(n int) []data.Task {
	out := make([]data.Task, n)
	for i := range out {
		t := data.Task{ID: fmt.Sprintf("%s-%d", d.name, i), Domain: d.name}
		switch d.name {
		case "math":
			a, b := 3*i+1, 7*i+2
			t.Problem = fmt.Sprintf("What is %d plus %d?", a, b)
			t.Answer = strconv.Itoa(a + b)
		case "searchqa":
			t.Problem = fmt.Sprintf("Who founded city number %d?", i)
			t.Answer = fmt.Sprintf("Founder Person%d", i)
		case "chess":
			// Solver moves at even indices, defender replies at odd.
			files := "abcdefgh"
			f := string(files[i%8])
			t.Problem = "puzzle"
			t.Answer = f + "2" + f + "4 " + f + "7" + f + "5 " + f + "1" + f + "3"
			if i%2 == 1 {
				t.Answer = f + "2" + f + "3"
			}
		}
		out[i] = t
	}
	return out
}

func (d *fakeDomain) NewEpisode(t data.Task) data.Episode { return &fakeEpisode{d: d, t: t} }

func (d *fakeDomain) GoldAction(t data.Task, obs data.Observation) (data.Action, error) {
	if d.name == "chess" {
		played, _ := obs.Fields["moves_so_far"].([]string)
		line := strings.Fields(t.Answer)
		if len(played) >= len(line) {
			return data.Action{}, fmt.Errorf("fake chess: line over")
		}
		return data.Action{Kind: data.ActMove, Text: line[len(played)]}, nil
	}
	return data.Action{Kind: data.ActAnswer, Text: t.Answer}, nil
}

type fakeTool struct{ name, desc string }

func (f fakeTool) Name() string        { return f.name }
func (f fakeTool) Description() string { return f.desc }
func (f fakeTool) Call(args string) (string, error) {
	switch f.name {
	case "calc":
		a, b, ok := strings.Cut(args, "+")
		x, err1 := strconv.Atoi(strings.TrimSpace(a))
		y, err2 := strconv.Atoi(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil {
			return "", fmt.Errorf("cannot evaluate %q", args)
		}
		return strconv.Itoa(x + y), nil
	case "search":
		var q struct {
			Query string `json:"query"`
		}
		if strings.HasPrefix(args, "{") {
			if err := json.Unmarshal([]byte(args), &q); err != nil {
				return "", err
			}
			args = q.Query
		}
		return "[1] Alpha\nfirst passage about " + args + ".\n[2] Beta\nsecond passage.\n[3] Gamma\nthird passage.", nil
	}
	return "", fmt.Errorf("no tool %s", f.name)
}

type fakeEpisode struct {
	d      *fakeDomain
	t      data.Task
	turn   int
	played []string
	done   bool
	final  data.StepResult
}

func (e *fakeEpisode) legal() []string {
	line := strings.Fields(e.t.Answer)
	if len(e.played) >= len(line) {
		return []string{}
	}
	want := line[len(e.played)]
	// The right move, a legal decoy and more: sorted like the real one.
	return []string{"a2a3", "h2h3", want}
}

func (e *fakeEpisode) Observe() data.Observation {
	switch e.d.name {
	case "chess":
		legal := e.legal()
		return data.Observation{Text: "White to move.\nLegal moves: " + strings.Join(legal, " "), Turn: e.turn,
			Fields: map[string]any{"side_to_move": "white", "fen": "8/8/8/8/8/8/8/8 w - - 0 1", "board": "........", "moves_so_far": append([]string{}, e.played...), "legal_moves": legal, "goal": "find the best move"}}
	}
	return data.Observation{Text: "Question: " + e.t.Problem, Turn: e.turn, Fields: map[string]any{"question": e.t.Problem}}
}

func (e *fakeEpisode) finish(r float64, f data.FailureKind, fb string) data.StepResult {
	e.done = true
	e.final = data.StepResult{Obs: e.Observe(), Done: true, Reward: r, Failure: f, Feedback: fb}
	return e.final
}

func (e *fakeEpisode) Step(a data.Action) data.StepResult {
	if e.done {
		return e.final
	}
	e.turn++
	switch a.Kind {
	case data.ActTool:
		for _, tl := range e.d.Tools() {
			if tl.Name() == a.Tool {
				out, err := tl.Call(a.Args)
				if err != nil {
					return data.StepResult{Obs: e.Observe(), Feedback: err.Error(), Failure: data.FailToolError}
				}
				return data.StepResult{Obs: e.Observe(), ToolResult: out}
			}
		}
		return data.StepResult{Obs: e.Observe(), Feedback: "no such tool", Failure: data.FailToolError}
	case data.ActMove:
		if e.d.name != "chess" {
			return e.finish(0, data.FailInvalid, "no moves here")
		}
		legal := e.legal()
		ok := false
		for _, m := range legal {
			ok = ok || m == a.Text
		}
		if !ok {
			return e.finish(0, data.FailInvalid, a.Text+" is illegal")
		}
		line := strings.Fields(e.t.Answer)
		if a.Text != line[len(e.played)] {
			return e.finish(0, data.FailWrong, a.Text+" is not the best move")
		}
		e.played = append(e.played, a.Text)
		if len(e.played) >= len(line) {
			return e.finish(1, data.FailNone, "solved")
		}
		reply := line[len(e.played)]
		e.played = append(e.played, reply)
		return data.StepResult{Obs: e.Observe(), Feedback: "The opponent replied " + reply + "."}
	case data.ActAnswer:
		if strings.EqualFold(strings.TrimSpace(a.Text), e.t.Answer) {
			return e.finish(1, data.FailNone, "correct")
		}
		return e.finish(0, data.FailWrong, "incorrect")
	}
	return e.finish(0, data.FailInvalid, "unknown action")
}

func fakeDomains() []*fakeDomain {
	return []*fakeDomain{{name: "math", turns: 3}, {name: "searchqa", turns: 2}, {name: "chess", turns: 3}}
}
