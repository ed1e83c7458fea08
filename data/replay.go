package data

import "fmt"

// ReplayGold plays task t through a fresh episode of d, taking the
// domain's gold action at every step, until the episode ends or twice the
// default turn budget is spent (the most any harness may use). It returns
// the last step's result and the number of steps taken. A gold replay that
// does not earn reward 1 means the task, the oracle or the verifier is
// wrong.
func ReplayGold(d Domain, t Task) (StepResult, int, error) {
	ep := d.NewEpisode(t)
	limit := 2 * d.DefaultMaxTurns()
	var res StepResult
	for turn := 0; turn < limit; turn++ {
		a, err := d.GoldAction(t, ep.Observe())
		if err != nil {
			return res, turn, fmt.Errorf("data: gold action for %s task %s: %w", d.Name(), t.ID, err)
		}
		res = ep.Step(a)
		if res.Done {
			return res, turn + 1, nil
		}
	}
	res.Failure = FailTurnLimit
	return res, limit, nil
}
