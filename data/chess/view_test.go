package chess

import (
	"strings"
	"testing"

	"whale/data"
)

func TestSAN(t *testing.T) {
	cases := []struct{ fen, uci, san string }{
		{startFEN, "g1f3", "Nf3"},
		{startFEN, "e2e4", "e4"},
		// Two knights reach d2: the file tells them apart.
		{"4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1", "b1d2", "Nbd2"},
		// Two rooks on the a-file reach a4: the rank tells them apart.
		{"4k3/R7/8/8/8/8/8/R3K3 w - - 0 1", "a1a4", "R1a4"},
		{"r3k3/8/8/8/8/8/8/4K3 b q - 0 1", "e8c8", "O-O-O"},
		{"5k2/8/8/8/8/8/8/4K2R w K - 0 1", "e1g1", "O-O+"},
		{"8/P6k/8/8/8/8/8/K7 w - - 0 1", "a7a8q", "a8=Q"},
		{"4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 1", "e5d6", "exd6"},
		{"4k3/8/8/8/8/8/3q4/4K3 w - - 0 1", "e1d2", "Kxd2"},
		// The back-rank mate reads as a check, never as a mate.
		{"7k/6pp/8/8/8/8/8/RR4K1 w - - 0 1", "b1b8", "Rb8+"},
	}
	for _, c := range cases {
		p, err := ParseFEN(c.fen)
		if err != nil {
			t.Fatal(err)
		}
		m, err := p.ParseMove(c.uci)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.SAN(m); got != c.san {
			t.Errorf("%s in %s: SAN %q, want %q", c.uci, c.fen, got, c.san)
		}
	}
}

func TestAttacksTool(t *testing.T) {
	// The black queen on d2 checks the king and is attacked by the king
	// and the knight on b1, defended by nothing.
	const fen = "4k3/8/8/8/8/8/3q4/1N2K3 w - - 0 1"
	out, err := attacksTool{}.Call(fen)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Black pieces attacked: queen d2 attacked by knight b1 and king e1, defended 0") {
		t.Errorf("report:\n%s", out)
	}
	if !strings.Contains(out, "White pieces attacked: king e1 attacked by queen d2, defended 0") {
		t.Errorf("report:\n%s", out)
	}
	sq, err := attacksTool{}.Call(fen + " | c3")
	if err != nil || sq != "c3 (empty) is attacked by White: knight b1; Black: queen d2" {
		t.Errorf("square report %q, %v", sq, err)
	}
	if _, err := (attacksTool{}).Call(fen + " | z9"); err == nil || !strings.Contains(err.Error(), "z9") {
		t.Errorf("bad square: %v", err)
	}
	// Inside an episode the tool reads the episode's position.
	ep := NewEpisode(mateTask(t, "7k/6pp/8/8/8/8/8/RR4K1 w - - 0 1", 1))
	res := ep.Step(data.Action{Kind: data.ActTool, Tool: AttacksTool, Args: "h8"})
	if res.Done || res.Failure != data.FailNone || !strings.HasPrefix(res.ToolResult, "h8 (black king)") {
		t.Errorf("tool step %+v", res)
	}
	if res := ep.Step(data.Action{Kind: data.ActTool, Tool: "engine"}); res.Failure != data.FailToolError || res.Done {
		t.Errorf("unknown tool %+v", res)
	}
	if res := ep.Step(data.Action{Kind: data.ActMove, Text: "b1b8"}); res.Reward != 1 {
		t.Errorf("mate after tool calls %+v", res)
	}
}

// A lichess puzzle shows the opponent's trigger move as the last move.
func TestObservationShowsLastMove(t *testing.T) {
	d, _, err := ImportLichess(sampleCSV, data.ImportOptions{Seed: 1, SkipBad: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range allTasks(t, d) {
		obs := d.NewEpisode(tk).Observe()
		last, _ := obs.Fields["last_move"].(string)
		if last == "" || !strings.Contains(obs.Text, "Last move: "+last+"\n") {
			t.Errorf("%s: last move %q in\n%s", tk.ID, last, obs.Text)
		}
	}
}
