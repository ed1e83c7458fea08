package math

import (
	"fmt"
	"math/big"
	"strings"

	"whale/data"
)

// Name is the domain's name.
const Name = "math"

// DefaultMaxTurns is the base harness's turn budget: up to two calc calls
// and an answer.
const DefaultMaxTurns = 3

// Domain is a set of math tasks dealt into splits.
type Domain struct {
	splits map[string][]data.Task
}

// New generates the domain's tasks from seed with data.DefaultSizes.
func New(seed uint64) (*Domain, error) { return NewSized(seed, data.DefaultSizes) }

// NewSized generates sizes.Total() distinct problems from seed and deals
// them into splits with data.SplitTasks.
func NewSized(seed uint64, sizes data.Sizes) (*Domain, error) {
	tasks, err := Generate(seed, sizes.Total())
	if err != nil {
		return nil, err
	}
	splits, err := data.SplitTasks(tasks, seed, sizes)
	if err != nil {
		return nil, fmt.Errorf("math: split generated tasks: %w", err)
	}
	return &Domain{splits: splits}, nil
}

// FromTasks makes a domain of already dealt splits.
func FromTasks(splits map[string][]data.Task) *Domain { return &Domain{splits: splits} }

// Name is "math".
func (d *Domain) Name() string { return Name }

// Tasks returns a copy of a split.
func (d *Domain) Tasks(split string) ([]data.Task, error) {
	ts, ok := d.splits[split]
	if !ok {
		return nil, fmt.Errorf("math: unknown split %q (want one of %s)", split, strings.Join(data.Splits, ", "))
	}
	return append([]data.Task(nil), ts...), nil
}

// Tools lists calc.
func (d *Domain) Tools() []data.Tool { return []data.Tool{Calc{}} }

// DefaultMaxTurns is 3.
func (d *Domain) DefaultMaxTurns() int { return DefaultMaxTurns }

// GoldAction answers with the gold answer.
func (d *Domain) GoldAction(t data.Task, _ data.Observation) (data.Action, error) {
	if t.Answer == "" {
		return data.Action{}, fmt.Errorf("math: task %s has no answer", t.ID)
	}
	return data.Action{Kind: data.ActAnswer, Text: t.Answer}, nil
}

// NewEpisode starts an attempt at t.
func (d *Domain) NewEpisode(t data.Task) data.Episode {
	e := &episode{task: t}
	if a, err := ParseAnswer(t.Answer); err == nil {
		e.gold = a.Value
	}
	return e
}

// episode is one attempt at a math task: any number of calc calls, then
// one answer.
type episode struct {
	task    data.Task
	gold    *big.Rat // nil when the task's answer is not a number: nothing is right
	turn    int
	history []string
	done    bool
	final   data.StepResult
}

// Observe shows the question and the calc calls made so far. Fields:
// "question" (string) and "tool_results" ([]string, "calc(ARGS) = VALUE"
// or "calc(ARGS) error: WHY").
func (e *episode) Observe() data.Observation {
	var b strings.Builder
	b.WriteString("Question: " + e.task.Problem)
	for _, h := range e.history {
		b.WriteString("\n" + h)
	}
	return data.Observation{
		Text:   b.String(),
		Fields: map[string]any{"question": e.task.Problem, "tool_results": append([]string{}, e.history...)},
		Turn:   e.turn,
	}
}

// maxHistoryArgs bounds how much of a call's arguments the observation
// echoes.
const maxHistoryArgs = 80

func (e *episode) Step(a data.Action) data.StepResult {
	if e.done {
		return e.final
	}
	e.turn++
	switch a.Kind {
	case data.ActTool:
		if a.Tool != "calc" {
			return data.StepResult{Obs: e.Observe(), Feedback: fmt.Sprintf("unknown tool %q; the tools are: calc", a.Tool), Failure: data.FailInvalid}
		}
		args := a.Args
		if len(args) > maxHistoryArgs {
			args = args[:maxHistoryArgs] + "…"
		}
		out, err := Calc{}.Call(a.Args)
		if err != nil {
			e.history = append(e.history, fmt.Sprintf("calc(%s) error: %v", args, err))
			return data.StepResult{Obs: e.Observe(), Feedback: err.Error(), Failure: data.FailToolError}
		}
		e.history = append(e.history, fmt.Sprintf("calc(%s) = %s", args, out))
		return data.StepResult{Obs: e.Observe(), ToolResult: out}
	case data.ActAnswer:
		ans, err := ParseAnswer(a.Text)
		if err != nil {
			return data.StepResult{Obs: e.Observe(), Feedback: "the answer holds no number", Failure: data.FailInvalid}
		}
		e.done = true
		e.final = data.StepResult{Obs: e.Observe(), Done: true, Feedback: "correct", Reward: 1}
		if e.gold == nil || !Matches(ans, e.gold) {
			e.final.Feedback, e.final.Reward, e.final.Failure = "incorrect", 0, data.FailWrong
		}
		return e.final
	default:
		return data.StepResult{Obs: e.Observe(), Feedback: fmt.Sprintf("action %q is not accepted here; answer, or call calc", a.Kind), Failure: data.FailInvalid}
	}
}
