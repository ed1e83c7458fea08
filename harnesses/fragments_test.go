package harnesses

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.starlark.net/starlark"

	"whale/data"
	"whale/data/domains"
)

// The fragments this library adds for test-time compute and for wrong
// answers, per domain: each is a SEARCH_SPACE choice with FRAGMENTS
// metadata.
var newFragments = map[string][]string{
	"searchqa": {"SYSTEM_GROUNDED", "_vote_logprob", "_vote_search_when_split", "_vote_grounded", "_valid_answer_type", "_view_narrow", "_after_question", "_after_format", "_route_bridge"},
	"math":     {"SYSTEM_ONE_EXPRESSION", "_vote_logprob", "_vote_calc_when_split", "_obs_numbers", "_obs_sentences", "_route_check_own", "_route_answer_last_turn", "_parse_calc_first", "_valid_numeric"},
	"chess":    {"SYSTEM_COPY", "_vote_logprob", "_vote_top_logprob", "_obs_labelled", "_obs_by_piece", "_obs_piece_list", "_history_tried", "_history_current_tried"},
}

func TestBuiltinsDeclareTheirFragments(t *testing.T) {
	for domain, names := range newFragments {
		src := builtinSrc(t, domain)
		frags, err := FragmentsOf(src)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) < 8 {
			t.Fatalf("%s: %d new fragments, want at least 8", domain, len(names))
		}
		for _, n := range names {
			found := false
			for _, f := range frags {
				if f.Key == n {
					found = true
					if f.Choice != n || len(f.Targets) == 0 {
						t.Fatalf("%s: %s metadata %+v: want a choice with targets", domain, n, f)
					}
				}
			}
			if !found {
				t.Fatalf("%s: %s has no FRAGMENTS entry", domain, n)
			}
		}
		space, _ := SpaceOf(src)
		for _, d := range space {
			if d.Knob == "SAMPLES" && (d.Range == nil || d.Current != "1") {
				t.Fatalf("%s: SAMPLES %+v: want a range with h0 at 1", domain, d)
			}
		}
	}
}

// Each fragment together with what it requires: the oracle still scores
// 1.0 through it on the real domains, the random policy stays near 0 and
// never trips a harness error.
func TestEveryFragmentWithItsRequires(t *testing.T) {
	for _, name := range domains.Names() {
		d, err := domains.Open(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		h := loadBuiltin(t, d)
		tasks, _ := d.Tasks(data.SplitVal)
		for _, f := range h.Fragments() {
			if f.Choice == "" {
				continue
			}
			set := map[string]string{f.Knob: f.Choice}
			for _, r := range f.Requires {
				set[r.Knob] = r.Choices[0]
			}
			src, err := MutateAll(h.Source, set)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Load(name+"/"+f.Key+".star", src, EnvOf(d))
			if err != nil {
				t.Fatalf("%s %v: %v", name, set, err)
			}
			ts, err := Run(context.Background(), m, d, tasks[:12], tokens(NewOracle(d)), RunOptions{Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			if got := meanReward(ts); got != 1 {
				t.Fatalf("%s %v: oracle mean %v, failures %v, first error %q", name, set, got, failures(ts), ts[0].Error)
			}
			rs, err := Run(context.Background(), m, d, tasks[:40], tokens(NewRandom()), RunOptions{Seed: 2, MaxNewTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			if got := meanReward(rs); got > 0.05 {
				t.Fatalf("%s %v: random mean %v, want near 0", name, set, got)
			}
			for _, tr := range rs {
				if tr.Failure == FailHarness {
					t.Fatalf("%s %v: harness error on random text: %s", name, set, tr.Error)
				}
			}
		}
	}
}

func TestFragmentsAreValidatedAtLoad(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	base := builtinSrc(t, "math")
	cases := map[string]struct{ entry, want string }{
		"unknown fragment":     {`"_nope": {"targets": ["wrong"]},`, `unknown fragment "_nope"`},
		"unknown failure kind": {`"_obs_plain": {"targets": ["slow"]},`, `unknown failure kind "slow"`},
		"unknown knob":         {`"_obs_plain": {"requires": {"TEMPERATURE": [1]}},`, `unknown knob "TEMPERATURE"`},
		"choice not in space":  {`"_obs_plain": {"requires": {"MAX_TURNS": [5]}},`, `5 is not a choice of MAX_TURNS`},
		"out of range":         {`"_obs_plain": {"requires": {"SAMPLES": range(4, 12)}},`, `9 is not a choice of SAMPLES (choices: range(1, 9))`},
		"unknown field":        {`"_obs_plain": {"cost": 3},`, `unknown field "cost"`},
		"bad pair":             {`"MAX_TURNS=5": {"targets": ["turn_limit"]},`, `5 is not a choice of MAX_TURNS`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(base, "FRAGMENTS = {\n", "FRAGMENTS = {\n    "+c.entry+"\n", 1)
			_, err := Load("bad.star", src, EnvOf(d))
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("loaded; want an issue %q", c.want)
			}
			line := strings.Count(src[:strings.Index(src, c.entry)], "\n") + 1
			is := le.Issues[0]
			if len(le.Issues) != 1 || is.Rule != "fragments" || !strings.Contains(is.Msg, c.want) || is.Line != line || is.Col < 5 {
				t.Fatalf("issues %v; want one fragments issue at bad.star:%d naming %q", le.Issues, line, c.want)
			}
		})
	}
}

func TestRangedKnobs(t *testing.T) {
	src := "A = 3\nB = 10\nSEARCH_SPACE = {\"A\": range(1, 9), \"B\": range(0, 40, 10)}\n"
	space, err := SpaceOf(src)
	if err != nil {
		t.Fatal(err)
	}
	if a := space[0]; a.Range == nil || len(a.Choices) != 8 || a.Current != "3" {
		t.Fatalf("A: %+v", a)
	}
	got, err := Mutate(src, "A", "8")
	if err != nil || !strings.HasPrefix(got, "A = 8\n") {
		t.Fatalf("mutate A=8: %v\n%s", err, got)
	}
	for _, bad := range []string{"9", "0", "x", "2.5"} {
		if _, err := Mutate(src, "A", bad); err == nil || !strings.Contains(err.Error(), "want an int in range(1, 9) (1..8)") {
			t.Fatalf("mutate A=%s: %v; want a refusal naming the range", bad, err)
		}
	}
	if _, err := Mutate(src, "B", "15"); err == nil || !strings.Contains(err.Error(), "0..30 in steps of 10") {
		t.Fatalf("mutate B=15: %v", err)
	}
	for bad, want := range map[string]string{
		"A = 3\nSEARCH_SPACE = {\"A\": range(5, 1)}\n":    "is empty",
		"A = 3\nSEARCH_SPACE = {\"A\": range(1, 9, 0)}\n": "step must be positive",
		"A = 9\nSEARCH_SPACE = {\"A\": range(1, 9)}\n":    "A = 9 is not an int in its SEARCH_SPACE range(1, 9)",
		"A = 3\nSEARCH_SPACE = {\"A\": len(\"ab\")}\n":    "list literal or range",
	} {
		if _, err := SpaceOf(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%q: %v; want %q", bad, err, want)
		}
	}
}

// call runs one contract function of the builtin with knobs set.
func callWith(t *testing.T, d data.Domain, set map[string]string, fn string, args ...starlark.Value) starlark.Value {
	t.Helper()
	src, err := MutateAll(builtinSrc(t, d.Name()), set)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Load("t.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	v, err := h.call(fn, args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func stateWith(kv map[string]string) *starlark.Dict {
	st := starlark.NewDict(4)
	for k, v := range kv {
		_ = st.SetKey(starlark.String(k), starlark.String(v))
	}
	return st
}

func TestSearchQANarrowedPassageKeepsTheOverlappingSentences(t *testing.T) {
	d := &fakeDomain{name: "searchqa", turns: 2}
	result := "[1] Foukronend\nFoukronend is a country in Africa. Its capital is Grougogrein. The official language of Foukronend is Foukronendic, and its currency is the crown. Foukronend became independent in 1866."
	st := stateWith(map[string]string{"question": "Which language is official in the birth country of Bekrouk Shoubropeth?"})
	v := callWith(t, d, map[string]string{"passage_view": "_view_narrow", "after_passages": "_after_question"}, "format_tool_result", starlark.String("search"), starlark.String(result), st)
	got := string(v.(starlark.String))
	if !strings.Contains(got, "The official language of Foukronend is Foukronendic") || strings.Contains(got, "independent") || strings.Contains(got, "capital") {
		t.Fatalf("narrowed passage %q: want the language sentence kept, the others dropped", got)
	}
	// (A single hit keeps its "[1]" marker, as under h0.)
	if !strings.HasPrefix(got, "[1] Foukronend\n") || !strings.HasSuffix(got, "Question: Which language is official in the birth country of Bekrouk Shoubropeth?") {
		t.Fatalf("want the title first and the question repeated last: %q", got)
	}
	// A passage that shares no word with the question is shown whole.
	st = stateWith(map[string]string{"question": "Who is the employer of Laimuth Habuve?"})
	whole := "[1] Laimuth Habuve\nLaimuth Habuve is a botanist. Habuve was born in Noumai. Habuve works for Raigre Holdings."
	v = callWith(t, d, map[string]string{"passage_view": "_view_narrow"}, "format_tool_result", starlark.String("search"), starlark.String(whole), st)
	if !strings.Contains(string(v.(starlark.String)), "works for Raigre Holdings") {
		t.Fatalf("passage without overlap was narrowed: %q", v)
	}
}

func TestSearchQAAnswerTypeCheck(t *testing.T) {
	d := &fakeDomain{name: "searchqa", turns: 2}
	for _, c := range []struct {
		q, a string
		ok   bool
	}{
		{"When was Megril Holdings founded?", "1958", true},
		{"When was Megril Holdings founded?", "Grougogreun", false},
		{"Who founded Megril Holdings?", "Bousour Thidras", true},
		{"Who founded Megril Holdings?", "2020", false},
		{"How long is the Oskan River in kilometres?", "412 km", true},
		{"Which language is official in Neisi?", "Neisic", true},
		{"Which city is the capital of Neisi?", "7", false},
		{"What is the occupation of Stak Truroshend?", "lawyer", true},
	} {
		obs, _ := fromGo(map[string]any{"text": "Question: " + c.q, "fields": map[string]any{"question": c.q}, "turn": 0})
		act, _ := fromGo(map[string]any{"kind": "answer", "text": c.a})
		v := callWith(t, d, map[string]string{"is_valid_action": "_valid_answer_type"}, "is_valid_action", obs, act)
		if bool(v.(starlark.Bool)) != c.ok {
			t.Fatalf("%q answered %q: valid %v, want %v", c.q, c.a, v, c.ok)
		}
	}
}

// The bridge query puts the second hop's document in front of the model
// more often than the question alone does, on the real two-hop tasks.
func TestSearchQABridgeRetrievesTheSecondHop(t *testing.T) {
	d, err := domains.Open("searchqa", 1)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := d.Tasks(data.SplitVal)
	var two []data.Task
	for _, tk := range all {
		if tk.Hidden["hops"] == "2" && len(two) < 80 {
			two = append(two, tk)
		}
	}
	recall := func(set map[string]string) float64 {
		src, err := MutateAll(builtinSrc(t, "searchqa"), set)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Load("b.star", src, EnvOf(d))
		if err != nil {
			t.Fatal(err)
		}
		pol := &Scripted{Default: func(string) Reply { return Reply{Text: "<answer>unknown</answer>"} }}
		ts, err := Run(context.Background(), h, d, two, tokens(pol), RunOptions{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		hit := 0
		for i, tr := range ts {
			shown := ""
			for _, tc := range tr.Tools {
				if !tc.ByHarness {
					t.Fatalf("a search the harness did not issue")
				}
				shown += tc.Shown
			}
			if strings.Contains(strings.ToLower(shown), strings.ToLower(two[i].Answer)) {
				hit++
			}
		}
		return float64(hit) / float64(len(ts))
	}
	base := recall(map[string]string{"MAX_TURNS": "3", "RETRIEVE_K": "3"})
	bridge := recall(map[string]string{"MAX_TURNS": "3", "RETRIEVE_K": "3", "next_step": "_route_bridge"})
	t.Logf("gold answer shown on %d two-hop tasks: %.2f forwarding the question, %.2f with the bridge", len(two), base, bridge)
	if len(two) < 40 || bridge < base+0.15 {
		t.Fatalf("bridge recall %.2f vs %.2f on %d tasks: want a clear gain", bridge, base, len(two))
	}
}

// calc runs on the model's own final expression before its answer counts.
func TestMathCalcOnTheModelsOwnExpression(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src, err := MutateAll(builtinSrc(t, "math"), map[string]string{"next_step": "_route_check_own"})
	if err != nil {
		t.Fatal(err)
	}
	tr, pol := runScripted(t, d, src, []Reply{{Text: "4 + 9 = 12, so <answer>12</answer>"}, {Text: "<answer>13</answer>"}})
	if tr.Reward != 1 || len(tr.Tools) != 1 || !tr.Tools[0].ByHarness || tr.Tools[0].Args != "4 + 9" || tr.Tools[0].Result != "13" {
		t.Fatalf("reward %v tools %+v: want the harness to calc 4 + 9 before the answer", tr.Reward, tr.Tools)
	}
	if last := bytesTok.Decode(pol.Requests[1].Prompt); !strings.Contains(last, "calc result: 13") {
		t.Fatalf("the model did not see the result before answering: %q", last)
	}
}

func TestMathParsersAndChecks(t *testing.T) {
	d := &fakeDomain{name: "math", turns: 3}
	src, _ := MutateAll(builtinSrc(t, "math"), map[string]string{"parse_action": "_parse_calc_first", "is_valid_action": "_valid_numeric", "format_observation": "_obs_numbers"})
	h, err := Load("m.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	a, err := h.ParseAction("<answer>12</answer> then <tool>calc: 4+9</tool>")
	if err != nil || a == nil || a.Kind != data.ActTool || a.Args != "4+9" {
		t.Fatalf("one calc per step: %+v %v", a, err)
	}
	for text, ok := range map[string]bool{"13": true, "$1,300.50": true, "-2/3": true, "13 apples": false, "x = 13": false} {
		act, _ := fromGo(map[string]any{"kind": "answer", "text": text})
		v, err := h.call("is_valid_action", starlark.None, act)
		if err != nil || bool(v.(starlark.Bool)) != ok {
			t.Fatalf("answer %q: %v %v, want %v", text, v, err, ok)
		}
	}
	act, _ := fromGo(map[string]any{"kind": "tool", "tool": "calc", "args": "four plus 9"})
	if v, _ := h.call("is_valid_action", starlark.None, act); v != starlark.False {
		t.Fatal("a calc call in words was accepted")
	}
	obs, _ := fromGo(map[string]any{"text": "", "fields": map[string]any{"question": "A bed is 12 m long and 16 m wide. Fencing costs $5.50 per meter, a gate 1,070 dollars."}, "turn": 0})
	v, err := h.call("format_observation", obs, starlark.NewDict(1))
	if err != nil || !strings.HasSuffix(string(v.(starlark.String)), "Numbers in the problem: 12, 16, 5.50, 1,070") {
		t.Fatalf("numbers listed: %v %v", v, err)
	}
}

// Labels name the moving piece and what it takes, read off the FEN, and
// never say check or mate.
func TestChessMovesLabelledByPieceAndCapture(t *testing.T) {
	d, err := domains.Open("chess", 1)
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := d.Tasks(data.SplitVal)
	src, _ := MutateAll(builtinSrc(t, "chess"), map[string]string{"format_observation": "_obs_labelled"})
	h, err := Load("c.star", src, EnvOf(d))
	if err != nil {
		t.Fatal(err)
	}
	names := map[byte]string{'p': "pawn", 'n': "knight", 'b': "bishop", 'r': "rook", 'q': "queen", 'k': "king"}
	captures := 0
	for _, tk := range tasks[:60] {
		o := d.NewEpisode(tk).Observe()
		board := map[string]byte{}
		for i, row := range strings.Split(strings.Fields(o.Fields["fen"].(string))[0], "/") {
			f := 0
			for _, ch := range []byte(row) {
				if ch >= '1' && ch <= '8' {
					f += int(ch - '0')
					continue
				}
				board[string(rune('a'+f))+string(rune('8'-i))] = ch
				f++
			}
		}
		ov, _ := fromGo(map[string]any{"text": o.Text, "fields": o.Fields, "turn": o.Turn})
		v, err := h.call("format_observation", ov, starlark.NewDict(1))
		if err != nil {
			t.Fatal(err)
		}
		text := string(v.(starlark.String))
		for _, m := range o.Fields["legal_moves"].([]string) {
			line := ""
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "- "+m+" ") || l == "- "+m {
					line = l
				}
			}
			p := board[m[:2]]
			if !strings.Contains(line, "("+names[p|0x20]) {
				t.Fatalf("%s: line %q does not name the %s moving", tk.ID, line, names[p|0x20])
			}
			if q, ok := board[m[2:4]]; ok && (q < 'a') != (p < 'a') {
				captures++
				if !strings.Contains(line, "takes "+names[q|0x20]) {
					t.Fatalf("%s: line %q does not say it takes the %s", tk.ID, line, names[q|0x20])
				}
			} else if strings.Contains(line, "takes") && !strings.Contains(line, "en passant") {
				t.Fatalf("%s: %q claims a capture on an empty square", tk.ID, line)
			}
			if strings.Contains(line, "check") || strings.Contains(line, "mate") {
				t.Fatalf("%s: %q labels a move by check or mate", tk.ID, line)
			}
		}
	}
	if captures == 0 {
		t.Fatal("no captures among 60 puzzles: the test saw nothing")
	}
}

// After an invalid move the retry names the moves already tried.
func TestChessRetryNamesTriedMoves(t *testing.T) {
	d := &fakeDomain{name: "chess", turns: 3}
	src, _ := MutateAll(builtinSrc(t, "chess"), map[string]string{"compact_history": "_history_tried", "INVALID_RETRY_BUDGET": "2"})
	tr, pol := runScripted(t, d, src, []Reply{{Text: "<move>e2e4</move>"}, {Text: "<move>d2d4</move>"}, {Text: "<move>b2b3</move>"}})
	if tr.Reward != 1 || tr.InvalidRetries != 2 {
		t.Fatalf("reward %v after %d invalid retries", tr.Reward, tr.InvalidRetries)
	}
	if p := bytesTok.Decode(pol.Requests[1].Prompt); !strings.Contains(p, "Already tried and refused here: e2e4.") {
		t.Fatalf("second prompt does not name the tried move: %q", p)
	}
	if p := bytesTok.Decode(pol.Requests[2].Prompt); !strings.Contains(p, "Already tried and refused here: e2e4, d2d4.") {
		t.Fatalf("third prompt does not name both tried moves: %q", p)
	}
}
