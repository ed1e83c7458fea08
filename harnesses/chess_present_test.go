package harnesses

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"whale/data"
	"whale/data/domains"
)

// The lint refuses string literals that judge a move (a solving
// annotation) and accepts ones that only present or instruct.
func TestLintRefusesSolvingAnnotations(t *testing.T) {
	env := EnvOf(&fakeDomain{name: "math", turns: 3})
	refused := []string{
		`NOTE = " (this move mates)"`,
		`LABEL = "Qh7+: this move is mate"`,
		`TAG = "(mate)"`,
		`TAG = " (best)"`,
		`MARK = "#"`,
		`HINT = "the winning move is listed first"`,
		`HINT = "Best move: "`,
		`HINT = "Rb8+ delivers mate"`,
	}
	for _, lit := range refused {
		src := minimal + lit + "  # HERE\n"
		_, err := Load("test.star", src, env)
		var le *LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), "lint/solving-annotation") {
			t.Errorf("%s loaded or refused for another reason: %v", lit, err)
			continue
		}
		if line := hereLine(src); !strings.Contains(err.Error(), fmt.Sprintf("test.star:%d:", line)) {
			t.Errorf("%s: error does not name line %d: %v", lit, line, err)
		}
	}
	accepted := []string{
		`P = "Find the best move for the side to move. Look for checks, captures and threats first."`,
		`P = "Reply with one move, for example <move>e2e4</move>. Goal: mate in 2."`,
		`P = "queen, takes pawn"`,
		`P = "# Board"`,
	}
	for _, lit := range accepted {
		if _, err := Load("test.star", minimal+lit+"\n", env); err != nil {
			t.Errorf("%s refused: %v", lit, err)
		}
	}
}

// Every presentation of the board in the chess library keeps the null
// audit: a content-blind pick among the moves a harness shows does no
// better under it than under h0 (within the engine's 3-point limit), so
// no fragment narrows the choice towards the answer.
func TestChessPresentationsKeepTheNullAudit(t *testing.T) {
	d, err := domains.Open("chess", 1)
	if err != nil {
		t.Fatal(err)
	}
	src, err := Builtin("chess", "h0")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := d.Tasks(data.SplitAudit)
	if err != nil {
		t.Fatal(err)
	}
	tasks = tasks[:min(128, len(tasks))]
	score := func(name, src string) []Trajectory {
		t.Helper()
		h, err := Load(name, src, EnvOf(d))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		null, err := NewNull(d)
		if err != nil {
			t.Fatal(err)
		}
		ts, err := Run(context.Background(), h, d, tasks, tokens(null), RunOptions{Seed: 1, K: 4, MaxNewTokens: 64})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return ts
	}
	base := meanReward(score("h0", src))
	if base <= 0 || base > 0.2 {
		t.Fatalf("null policy under h0 scores %.3f: want a small positive chance level", base)
	}
	variants := map[string]map[string]string{}
	for _, obs := range []string{"_obs_san_lines", "_obs_san_by_piece", "_obs_pieces_first", "_obs_last_move_first"} {
		variants[obs] = map[string]string{"format_observation": obs}
	}
	variants["attacks tool"] = map[string]string{"TOOLS": "TOOLS_ATTACKS", "next_step": "_route_attacks", "MAX_TURNS": "6", "format_tool_result": "_tool_attacks_note"}
	for name, knobs := range variants {
		v, err := MutateAll(src, knobs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ts := score(name, v)
		got := meanReward(ts)
		if knobs["next_step"] == "_route_attacks" && (len(ts[0].Tools) == 0 || !ts[0].Tools[0].ByHarness || !strings.Contains(ts[0].Tools[0].Result, "pieces attacked")) {
			t.Errorf("%s: the harness did not call the attacks tool first: %+v", name, ts[0].Tools)
		}
		t.Logf("%s: null %.3f, h0 %.3f", name, got, base)
		if math.Abs(got-base) > 0.03 {
			t.Errorf("%s: the null policy scores %.3f against %.3f under h0: more than 3 points apart", name, got, base)
		}
	}
}
