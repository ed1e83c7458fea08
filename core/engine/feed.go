package engine

import (
	"encoding/binary"

	"whale/core/weights"
	"whale/data"
	"whale/harnesses"
)

// A voting harness draws SAMPLES completions per model call and the episode
// goes on from the one aggregate chose. The others were paid for; those
// that are verified correct are training data the weight phase would
// otherwise throw away. voteExtras turns them into RSFT samples.

// voteExtras returns one training sample for every verified-correct
// completion a voting call drew beside the chosen one, once per distinct
// (prompt, completion) token sequence and never one already in trained
// (the step's samples). A passed-over completion is verified correct when
// its action is the chosen completion's in a trajectory that earned the
// threshold (the same action from the same state), or when it is a final
// answer that a fresh episode of its task rewards at the threshold (an
// answer's verification depends on the task alone in math and searchqa).
// A chess move other than the chosen one is not verified: its reward
// depends on the moves after it. tasks holds the step's tasks by id.
func (e *Engine) voteExtras(tasks map[string]data.Task, ts []harnesses.Trajectory, trained []weights.Sample) []weights.Sample {
	if e.Cfg.ChosenOnly || e.Cfg.Operator != "rsft" {
		return nil
	}
	seen := map[string]bool{}
	for _, s := range trained {
		if s.Reward < e.Cfg.Threshold {
			continue
		}
		for _, c := range s.Calls {
			seen[tokenKey(c.Prompt, c.Completion)] = true
		}
	}
	var out []weights.Sample
	for _, t := range ts {
		for i, c := range t.Calls {
			if !c.NotChosen || c.Action == nil {
				continue
			}
			chosen := chosenAfter(t.Calls, i)
			if chosen == nil {
				continue
			}
			reward, ok := e.verifyPassedOver(tasks[t.TaskID], t, *c.Action, chosen)
			if !ok {
				continue
			}
			k := tokenKey(chosen.Prompt, c.Completion)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, weights.Sample{Group: t.TaskID, Reward: reward,
				Calls: []weights.Call{{Prompt: chosen.Prompt, Completion: c.Completion, LogProbs: c.LogProbs}}})
		}
	}
	return out
}

// chosenAfter is the chosen completion of the voting call whose passed-over
// sample is calls[i]: the first trained call after it (the runtime records
// the passed-over samples just before the chosen one, whose prompt they
// share).
func chosenAfter(calls []harnesses.Call, i int) *harnesses.Call {
	for j := i + 1; j < len(calls); j++ {
		if calls[j].Trained() {
			return &calls[j]
		}
	}
	return nil
}

// verifyPassedOver reports the reward a passed-over action earns and
// whether it is verified at the threshold (see voteExtras).
func (e *Engine) verifyPassedOver(task data.Task, t harnesses.Trajectory, a data.Action, chosen *harnesses.Call) (float64, bool) {
	if chosen.Action != nil && *chosen.Action == a && t.Reward >= e.Cfg.Threshold {
		return t.Reward, true
	}
	if a.Kind != data.ActAnswer || task.ID == "" {
		return 0, false
	}
	r := e.env.Domain.NewEpisode(task).Step(a)
	return r.Reward, r.Done && r.Reward >= e.Cfg.Threshold
}

// tokenKey is a prompt and a completion's token ids as one exact key
// (the prompt's length first, so no two pairs share a key).
func tokenKey(prompt, completion []int32) string {
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, 4*(1+len(prompt)+len(completion))), uint32(len(prompt)))
	for _, x := range prompt {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	for _, x := range completion {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return string(b)
}
