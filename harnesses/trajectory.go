package harnesses

import (
	"strings"

	"whale/core/policy"
	"whale/data"
)

// FailHarness marks a rollout ended by the harness itself failing: a
// Starlark error, a contract violation at run time, or an answer the
// harness invented (anti-cheat). Only the runtime reports it.
const FailHarness data.FailureKind = "harness_error"

// Message is one chat message of a rollout's transcript: what the policy
// is handed.
type Message = policy.Message

// Call is one policy call of a rollout: exactly the tokens the model saw
// and produced, for the weight phase, and the text, for people. The
// tokens come from the completion; a policy that sees only text (a
// server, a scripted policy not given a tokenizer) leaves them empty.
type Call struct {
	Key        string    `json:"key"`
	Prompt     []int32   `json:"prompt"`
	Completion []int32   `json:"completion"`
	LogProbs   []float32 `json:"logprobs"`
	// Entropy is the policy's mean token entropy over Completion (nats;
	// 0 where the policy does not report it).
	Entropy float32             `json:"entropy,omitempty"`
	Finish  policy.FinishReason `json:"finish"`
	Text    string              `json:"text"`
	// Action is what parse_action made of Text, if anything.
	Action *data.Action `json:"action,omitempty"`
	// Outcome says what the runtime did with the completion: "tool",
	// "move", "answer", "format_retry", "invalid_retry", or a failure kind.
	Outcome string `json:"outcome"`
	// Dropped counts history messages the policy left out to fit
	// CONTEXT_TOKENS; Cut is set when a message had to be shortened as
	// well.
	Dropped int  `json:"dropped,omitempty"`
	Cut     bool `json:"cut,omitempty"`
	// Sample is the completion's index among a voting call's SAMPLES.
	// NotChosen marks a completion aggregate passed over: it was paid
	// for and is kept for people, but the episode did not go on from it
	// and the weight phase never trains on it. Its Prompt is left out
	// (it is the chosen call's, which follows it).
	Sample    int  `json:"sample,omitempty"`
	NotChosen bool `json:"not_chosen,omitempty"`
}

// ToolCall is one tool call of a rollout.
type ToolCall struct {
	Turn   int    `json:"turn"`
	Tool   string `json:"tool"`
	Args   string `json:"args"`
	Result string `json:"result"`
	// Shown is what the model was shown (format_tool_result's output).
	Shown  string `json:"shown"`
	Failed bool   `json:"failed,omitempty"`
	// ByHarness is set when next_step issued the call, not the model.
	ByHarness bool `json:"by_harness,omitempty"`
}

// Trained reports whether the weight phase may train on the call: every
// call the episode went on from (all but the completions a vote passed
// over).
func (c *Call) Trained() bool { return !c.NotChosen }

// Trajectory is one rollout: one task run through a harness by a policy.
type Trajectory struct {
	TaskID  string `json:"task_id"`
	Sample  int    `json:"sample"`
	Domain  string `json:"domain"`
	Harness string `json:"harness"`
	Calls   []Call `json:"calls"`
	// Tools lists tool calls in order.
	Tools []ToolCall `json:"tools,omitempty"`
	// Messages is the full transcript (before context truncation).
	Messages       []Message        `json:"messages"`
	Turns          int              `json:"turns"`
	FormatRetries  int              `json:"format_retries"`
	InvalidRetries int              `json:"invalid_retries"`
	Reward         float64          `json:"reward"`
	Failure        data.FailureKind `json:"failure,omitempty"`
	// Error explains a FailHarness with the harness's file:line:col.
	Error string `json:"error,omitempty"`
}

// FinalAnswer identifies what the rollout submitted: the normalised
// answers and moves it stepped with, in order ("" when none), so that two
// rollouts that said the same thing compare equal (maj@k).
func (t *Trajectory) FinalAnswer() string {
	var parts []string
	for _, c := range t.Calls {
		if c.Action != nil && !c.NotChosen && (c.Outcome == string(data.ActAnswer) || c.Outcome == string(data.ActMove)) {
			parts = append(parts, ActionKey(string(c.Action.Kind), c.Action.Text, "", ""))
		}
	}
	return strings.Join(parts, " ")
}

// ModelCalls counts the completions the rollout paid for: every call,
// voting samples included.
func (t *Trajectory) ModelCalls() int { return len(t.Calls) }
