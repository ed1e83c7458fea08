// Package data holds whale's task domains: seeded generators, multi-turn
// environments (episodes), the tools they offer, verifiers, and importers of
// real data formats. An episode shows a solver only what it may see; the
// verifier lives inside the episode and a harness never sees an answer.
//
// The package must never depend on the engine, a model or a harness.
package data

// Split names. Splits are deterministic from a seed and pairwise disjoint.
const (
	SplitTrain = "train"
	SplitVal   = "val"
	SplitAudit = "audit" // never used for selection: catches harness search that overfits val
	SplitTest  = "test"
)

// Splits lists the split names in a fixed order.
var Splits = []string{SplitTrain, SplitVal, SplitAudit, SplitTest}

// Task is one problem of a domain.
type Task struct {
	ID     string `json:"id"`
	Domain string `json:"domain"`
	// Problem is the visible statement of the task as a solver would read it.
	Problem string `json:"problem"`
	// Answer is the hidden canonical gold answer (math: a number; searchqa:
	// the canonical name; chess: the solver's moves in UCI, space separated).
	Answer string `json:"answer"`
	// Aliases are other accepted spellings of Answer.
	Aliases []string `json:"aliases,omitempty"`
	// Level is a difficulty level, 1 = easiest; 0 when unknown.
	Level int `json:"level,omitempty"`
	// Hidden holds domain-specific data the episode needs and a solver must
	// not see (for example a chess puzzle's start FEN and listed line).
	Hidden map[string]string `json:"hidden,omitempty"`
}

// FailureKind says why a rollout did not earn full reward. The episode
// reports Invalid, Wrong and ToolError; the harness runtime reports Format,
// Truncated and TurnLimit, which only it can see.
type FailureKind string

const (
	FailNone      FailureKind = ""
	FailFormat    FailureKind = "format"     // output could not be parsed into an action
	FailInvalid   FailureKind = "invalid"    // parsed, but not a legal action here
	FailWrong     FailureKind = "wrong"      // a legal final answer that is incorrect
	FailTruncated FailureKind = "truncated"  // completion cut off by the token budget
	FailToolError FailureKind = "tool_error" // a tool call failed
	FailTurnLimit FailureKind = "turn_limit" // turns ran out before a final answer
)

// FailureKinds lists every failure kind in a fixed order, for reports.
var FailureKinds = []FailureKind{FailFormat, FailInvalid, FailWrong, FailTruncated, FailToolError, FailTurnLimit}

// ActionKind is what a parsed model output asks the environment to do.
type ActionKind string

const (
	ActAnswer ActionKind = "answer" // a final answer (math, searchqa)
	ActMove   ActionKind = "move"   // a chess move in UCI
	ActTool   ActionKind = "tool"   // a tool call
)

// Action is a parsed model output.
type Action struct {
	Kind ActionKind `json:"kind"`
	// Text is the answer or the move.
	Text string `json:"text,omitempty"`
	// Tool and Args name a tool call.
	Tool string `json:"tool,omitempty"`
	Args string `json:"args,omitempty"`
}

// Observation is what a solver may see at one point of an episode. Fields
// holds only visible, structured values — strings, ints, float64s, bools and
// []string — so that a harness can lay them out as it likes.
type Observation struct {
	// Text is a plain default rendering of the visible state.
	Text string `json:"text"`
	// Fields are the same facts, structured (domain-specific keys, e.g.
	// "question"; chess: "fen", "board", "side_to_move", "moves_so_far",
	// "legal_moves").
	Fields map[string]any `json:"fields"`
	// Turn counts the solver's steps so far (tool calls included).
	Turn int `json:"turn"`
}

// StepResult is the outcome of one Step.
type StepResult struct {
	Obs Observation
	// Feedback is text for the solver about the step (why a move was
	// illegal, the defender's reply, ...).
	Feedback string
	// ToolResult is the tool's output when the action was a tool call.
	ToolResult string
	Done       bool
	// Reward in [0, 1]; meaningful when Done.
	Reward  float64
	Failure FailureKind
}

// Episode is one multi-turn attempt at a task. It is not safe for
// concurrent use.
type Episode interface {
	// Observe returns the current visible state.
	Observe() Observation
	// Step applies an action: a tool call returns its result and does not
	// end the episode (a failed call reports FailToolError); an answer or a
	// move is verified. Step after Done returns the final result again.
	Step(a Action) StepResult
}

// Tool is a function a domain offers to the solver. Calls are bounded by
// input size, work (counted in steps) and output size, never by wall-clock
// time, so that results do not depend on machine load. A failed call is an
// error, never a panic.
type Tool interface {
	Name() string
	// Description is one line for a prompt.
	Description() string
	Call(args string) (string, error)
}

// Domain is a set of tasks with an environment, tools and a verifier.
type Domain interface {
	Name() string
	// Tasks returns a split (train, val, audit or test).
	Tasks(split string) ([]Task, error)
	NewEpisode(t Task) Episode
	// Tools lists the tools episodes of this domain accept, by name.
	Tools() []Tool
	// DefaultMaxTurns is the turn budget of the baseline harness; harnesses
	// may raise it to at most twice this.
	DefaultMaxTurns() int
	// GoldAction returns the action a perfect solver takes from obs in task
	// t (for chess it may search for the mating move after an unlisted
	// defender reply). Oracle policies and gold replays use it.
	GoldAction(t Task, obs Observation) (Action, error)
}
