package experiments

import (
	"fmt"

	"whale/core/engine"
)

// EvaluationNote says what a plan's runs evaluate and when: the
// paragraph "What is evaluated when" of RESULTS.md.
func EvaluationNote(p Plan) (string, error) {
	pre, err := engine.Preset(p.Preset, "math")
	if err != nil {
		return "", err
	}
	k := p.CurveK
	if k <= 0 {
		k = pre.TestK
	}
	tests := pre.TestTasks
	if p.TestTasks > 0 {
		tests = p.TestTasks
	}
	when := "at the start and at every phase boundary"
	if !p.CurveDense {
		when = "at the start and at phase boundaries 1, 2, 4, 8, … and the run's last (a boundary between keeps its val score alone, so the curves step through it and the per-round gains there are read on val; the curves bend most in the first phases, which the points crowd, and a run's phase count is not known before the ledgers end it)"
	}
	return fmt.Sprintf("What is evaluated when: val at k = %d on the %d val tasks at the start and at every phase boundary (it picks the best checkpoint and drives the schedule); "+
		"under weights no harness was scored under yet, those val draws are the harness search's own (its passes 0 … %d), so the next harness phase's first score of the incumbent reuses them instead of paying again, "+
		"while after a harness phase val is drawn afresh (the search's draws chose the incumbent and would carry the selection's optimism). "+
		"Test at k = %d on the %d test tasks %s, for the curves only; "+
		"and the best-val checkpoint's test at k = %d once at the end, the score of every table. Test never selects anything, and its rollouts draw under keys of their own, so which boundaries measure it changes no run's training.",
		pre.ValK, pre.ValTasks, pre.ValK-1, k, tests, when, pre.TestK), nil
}
